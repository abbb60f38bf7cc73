package io.graphlane.inference.api;

import java.util.List;

/** A finished generation: the prompt, the generated token ids in order, and why it stopped. */
public record GenerationResult(List<Integer> promptIds, List<Integer> generatedIds, FinishReason finishReason) {
    public GenerationResult {
        promptIds = List.copyOf(promptIds);
        generatedIds = List.copyOf(generatedIds);
    }
}
