package io.graphlane.inference.api;

/**
 * Why a generation ended normally: the API-level finish reason (the engine's is
 * {@link io.graphlane.scheduler.pipeline.EngineFinishReason}).
 */
public enum FinishReason {
    /** It produced the requested number of tokens (OpenAI's "length"). */
    LENGTH,
    /** It produced the model's end-of-sequence token (OpenAI's "stop"). */
    STOP;

    /** The name OpenAI's API uses. */
    public String openAiName() {
        return this == LENGTH ? "length" : "stop";
    }
}
