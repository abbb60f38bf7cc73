package io.graphlane.inference.api;

import io.graphlane.scheduler.pipeline.SampledToken;

/**
 * Receives one generation's tokens in order, then exactly one of {@link #onFinished} or
 * {@link #onFailed}. Called from graphlane's threads: implementations must be quick and
 * must not block. The API-level listener; the engine below tells an
 * {@link io.graphlane.scheduler.pipeline.EngineListener}.
 */
public interface GenerationListener {
    /** The next generated token. */
    default void onToken(int tokenId) { }

    /**
     * The next generated token with its log-probabilities when the request asked for them
     * ({@link io.graphlane.inference.sampling.SamplingParams#topLogprobs()}); by default {@link #onToken(int)}.
     * Generators call this one, so a listener overrides either.
     */
    default void onToken(SampledToken token) {
        onToken(token.id());
    }

    /** The generation ended normally. */
    default void onFinished(FinishReason reason) { }

    /** The generation failed, was cancelled, or passed its deadline; {@code cause} says which. */
    default void onFailed(Throwable cause) { }
}
