package io.graphlane.inference.api;

/**
 * Receives one generation's tokens in order, then exactly one of {@link #onFinished} or
 * {@link #onFailed}. Called from graphlane's threads: implementations must be quick and
 * must not block.
 */
public interface GenerationListener {
    /** The next generated token. */
    default void onToken(int tokenId) { }

    /** The generation ended normally. */
    default void onFinished(FinishReason reason) { }

    /** The generation failed, was cancelled, or passed its deadline; {@code cause} says which. */
    default void onFailed(Throwable cause) { }
}
