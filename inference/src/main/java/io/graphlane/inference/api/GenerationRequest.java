package io.graphlane.inference.api;

import io.graphlane.inference.sampling.SamplingParams;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * One generation: the prompt's token ids, how many tokens to generate at most, how to
 * sample them, and an optional deadline measured from submission.
 */
public record GenerationRequest(List<Integer> promptIds, int maxNewTokens, SamplingParams sampling, Optional<Duration> timeout) {
    public GenerationRequest {
        Objects.requireNonNull(promptIds, "promptIds");
        promptIds = List.copyOf(promptIds);
        if (promptIds.isEmpty()) {
            throw new IllegalArgumentException("the prompt must have at least one token");
        }
        if (maxNewTokens < 1) {
            throw new IllegalArgumentException("max new tokens must be >= 1, got " + maxNewTokens);
        }
        Objects.requireNonNull(sampling, "sampling");
        Objects.requireNonNull(timeout, "timeout");
    }

    public static GenerationRequest greedy(List<Integer> promptIds, int maxNewTokens) {
        return new GenerationRequest(promptIds, maxNewTokens, SamplingParams.GREEDY, Optional.empty());
    }
}
