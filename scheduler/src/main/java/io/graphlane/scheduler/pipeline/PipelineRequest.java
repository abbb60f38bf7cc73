package io.graphlane.scheduler.pipeline;

import java.util.Objects;

/**
 * One generation for the engine: the prompt, at most {@code maxNewTokens} tokens to generate,
 * the tokens that end it early (a model may have several end-of-sequence ids; empty for none), an
 * absolute deadline in {@link System#nanoTime()} terms ({@link Long#MAX_VALUE} for none), and the request's
 * sampling state that the stage program samples with (null for a program that does not sample from logits).
 */
public record PipelineRequest(int[] promptIds, int maxNewTokens, int[] endOfSequenceTokens, long deadlineNanos, TokenSampler sampling) {
    public PipelineRequest {
        Objects.requireNonNull(promptIds, "promptIds");
        Objects.requireNonNull(endOfSequenceTokens, "endOfSequenceTokens");
        if (promptIds.length == 0) {
            throw new IllegalArgumentException("the prompt must have at least one token");
        }
        if (maxNewTokens < 1) {
            throw new IllegalArgumentException("max new tokens must be >= 1, got " + maxNewTokens);
        }
        promptIds = promptIds.clone();
        endOfSequenceTokens = endOfSequenceTokens.clone();
    }

    /** A request ended early by the one token {@code endOfSequenceToken} ({@code -1} for none). */
    public PipelineRequest(int[] promptIds, int maxNewTokens, int endOfSequenceToken, long deadlineNanos, TokenSampler sampling) {
        this(promptIds, maxNewTokens, endOfSequenceToken < 0 ? new int[0] : new int[] {endOfSequenceToken}, deadlineNanos, sampling);
    }

    /**
     * The most positions the request's KV caches may hold: its prompt plus its maximum of new tokens (in long, so no
     * sum wraps). What admission reserves for it.
     */
    public long kvPositions() {
        return (long) promptIds.length + maxNewTokens;
    }

    /** Whether {@code token} ends this request. */
    public boolean endsSequence(int token) {
        for (int eos : endOfSequenceTokens) {
            if (eos == token) {
                return true;
            }
        }
        return false;
    }
}
