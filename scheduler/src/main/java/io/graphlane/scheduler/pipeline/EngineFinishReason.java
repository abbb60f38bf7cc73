package io.graphlane.scheduler.pipeline;

/**
 * Why an engine request ended normally, as told to its {@link EngineListener} (the API-level reason is
 * {@code io.graphlane.inference.api.FinishReason}).
 */
public enum EngineFinishReason {
    /** It generated its maximum number of tokens. */
    LENGTH,
    /** It generated its end-of-sequence token. */
    END_OF_SEQUENCE
}
