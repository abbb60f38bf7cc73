package io.graphlane.inference.generate;

import io.graphlane.core.GraphlaneException;
import io.graphlane.inference.sampling.SamplingParams;
import java.util.Set;

/**
 * One prompt for {@link SequentialGenerator} to continue (a request to the reference generator; requests to a
 * served model are {@code io.graphlane.inference.api.GenerationRequest}s).
 *
 * @param promptIds     the prompt's token ids, at least one
 * @param maxNewTokens  tokens to generate at most, at least one
 * @param sampling      how each token is chosen
 * @param stopTokenIds  tokens that end the generation (kept as its last token), such as the end-of-sequence id
 */
public record SequentialRequest(int[] promptIds, int maxNewTokens, SamplingParams sampling, Set<Integer> stopTokenIds) {

    /** Validates the prompt and the budget. */
    public SequentialRequest {
        if (promptIds == null || promptIds.length == 0) {
            throw new GraphlaneException("a prompt needs at least one token id");
        }
        if (maxNewTokens < 1) {
            throw new GraphlaneException("max new tokens must be >= 1, got " + maxNewTokens);
        }
        promptIds = promptIds.clone();
        stopTokenIds = Set.copyOf(stopTokenIds);
    }

    /** A request with no stop tokens. */
    public SequentialRequest(int[] promptIds, int maxNewTokens, SamplingParams sampling) {
        this(promptIds, maxNewTokens, sampling, Set.of());
    }

    @Override
    public int[] promptIds() {
        return promptIds.clone();
    }
}
