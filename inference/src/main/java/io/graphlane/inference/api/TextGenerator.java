package io.graphlane.inference.api;

/**
 * A model ready to generate: the embedding API's entry point and what the HTTP server serves.
 * Thread-safe; {@link #submit} never blocks on the model's work.
 */
public interface TextGenerator extends AutoCloseable {
    /** The model's name, as reported to clients. */
    String modelName();

    /** The model's tokenizer. */
    TokenCodec tokenizer();

    /** The largest prompt plus generation length the model accepts. */
    int maxSequenceLength();

    /** The number of token ids the model scores (ids are 0 to this, exclusive), or empty where it is not known. */
    default java.util.OptionalInt vocabularySize() {
        return java.util.OptionalInt.empty();
    }

    /** The ids that end a generation (a model may have several); by default the tokenizer's one, if any. */
    default java.util.Set<Integer> eosTokenIds() {
        int eos = tokenizer().eosTokenId();
        return eos < 0 ? java.util.Set.of() : java.util.Set.of(eos);
    }

    /** The model's chat template, if it has one; by default none. */
    default java.util.Optional<io.graphlane.inference.chat.ChatTemplate> chatTemplate() {
        return java.util.Optional.empty();
    }

    /**
     * The model's sampling defaults ({@code generation_config.json}), which a server applies to a request field the
     * request leaves out; by default none.
     */
    default io.graphlane.inference.sampling.GenerationDefaults generationDefaults() {
        return io.graphlane.inference.sampling.GenerationDefaults.NONE;
    }

    /**
     * Why new requests are refused now (it is shut down, its engine stopped, a stage has no host), or empty while it
     * serves: what a server's health and readiness report. The default: always available.
     */
    default java.util.Optional<String> unavailableReason() {
        return java.util.Optional.empty();
    }

    /**
     * The most generations it holds at once (generating plus queued): a batch of more prompts can never be admitted
     * whole. The default: no such bound.
     */
    default int maxHeldRequests() {
        return Integer.MAX_VALUE;
    }

    /**
     * Admits {@code request} and starts generating; tokens stream to {@code listener}.
     *
     * @throws GenerationRefusedException at once if the request is invalid for this model or admission refuses it
     */
    Generation submit(GenerationRequest request, GenerationListener listener);

    /**
     * Generates for every request at once and waits for all: a convenience for batch callers and tests.
     *
     * @throws java.util.concurrent.TimeoutException if they have not all ended within {@code timeout}
     * @throws java.util.concurrent.ExecutionException with the first failure
     */
    default java.util.List<GenerationResult> generateAll(java.util.List<GenerationRequest> requests, java.time.Duration timeout)
            throws Exception {
        java.util.List<java.util.concurrent.CompletableFuture<GenerationResult>> results = new java.util.ArrayList<>();
        for (GenerationRequest r : requests) {
            results.add(submit(r, new GenerationListener() { }).result().toCompletableFuture());
        }
        java.util.concurrent.CompletableFuture.allOf(results.toArray(java.util.concurrent.CompletableFuture[]::new))
                .get(timeout.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS);
        java.util.List<GenerationResult> out = new java.util.ArrayList<>();
        results.forEach(f -> out.add(f.join()));
        return out;
    }

    /**
     * What the generator is doing now (requests running and waiting, stage busy time, lane queues, KV-cache
     * use), read from counters its engine publishes, never by waiting for it; empty if this generator does
     * not report any.
     */
    default java.util.Optional<ServingStats> servingStats() {
        return java.util.Optional.empty();
    }

    /** Stops admitting requests, fails those in flight, and releases the model. */
    @Override
    void close();
}
