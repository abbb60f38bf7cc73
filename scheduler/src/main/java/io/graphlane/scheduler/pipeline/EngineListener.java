package io.graphlane.scheduler.pipeline;

/**
 * Receives one engine request's tokens in order, then exactly one of {@link #onFinished} or {@link #onFailed}: the
 * engine-level listener of the {@link PipelineEngine} (the API-level one, which the inference module's generators
 * drive, is {@code io.graphlane.inference.api.GenerationListener}). Called on the engine actor's thread: must be
 * quick and never block.
 */
public interface EngineListener {
    void onToken(int tokenId);

    /** The next token with what was computed about it (log-probabilities when the request asked); by default {@link #onToken(int)}. */
    default void onToken(SampledToken token) {
        onToken(token.id());
    }

    void onFinished(EngineFinishReason reason);

    void onFailed(Throwable cause);
}
