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

    /**
     * Admits {@code request} and starts generating; tokens stream to {@code listener}.
     *
     * @throws GenerationRefusedException at once if the request is invalid for this model or admission refuses it
     */
    Generation submit(GenerationRequest request, GenerationListener listener);

    /** Stops admitting requests, fails those in flight, and releases the model. */
    @Override
    void close();
}
