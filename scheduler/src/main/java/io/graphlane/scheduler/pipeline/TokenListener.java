package io.graphlane.scheduler.pipeline;

/**
 * Receives one request's tokens in order, then exactly one of {@link #onFinished} or
 * {@link #onFailed}. Called on the engine actor's thread: must be quick and never block.
 */
public interface TokenListener {
    void onToken(int tokenId);

    /** The next token with what was computed about it (log-probabilities when the request asked); by default {@link #onToken(int)}. */
    default void onToken(SampledToken token) {
        onToken(token.id());
    }

    void onFinished(StopReason reason);

    void onFailed(Throwable cause);

    /** Why a request ended normally. */
    enum StopReason {
        /** It generated its maximum number of tokens. */
        LENGTH,
        /** It generated its end-of-sequence token. */
        END_OF_SEQUENCE
    }
}
