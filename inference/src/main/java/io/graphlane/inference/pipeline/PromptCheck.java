package io.graphlane.inference.pipeline;

import io.graphlane.inference.api.GenerationRefusedException;
import io.graphlane.inference.api.GenerationRequest;
import io.graphlane.inference.llama.LlamaConfig;

/** The admission checks every engine applies to a request for a Llama-family model. */
public final class PromptCheck {
    private PromptCheck() {
    }

    /**
     * The prompt's ids, once every id is inside the vocabulary, prompt plus new tokens fit the model's positions, and
     * every token id the logit bias names is inside the vocabulary.
     *
     * @throws GenerationRefusedException (INVALID) naming the token or the lengths otherwise
     */
    public static int[] validPrompt(GenerationRequest request, LlamaConfig config) {
        int[] prompt = new int[request.promptIds().size()];
        for (int i = 0; i < prompt.length; i++) {
            int id = request.promptIds().get(i);
            if (id < 0 || id >= config.vocabSize()) {
                throw new GenerationRefusedException(GenerationRefusedException.Reason.INVALID,
                        "prompt token " + i + " is id " + id + ", outside the vocabulary [0, " + config.vocabSize() + ")");
            }
            prompt[i] = id;
        }
        int total = prompt.length + request.maxNewTokens();
        if (total > config.maxPositions()) {
            throw new GenerationRefusedException(GenerationRefusedException.Reason.INVALID, "prompt (" + prompt.length
                    + " tokens) plus max new tokens (" + request.maxNewTokens() + ") is " + total
                    + ", more than the model's maximum of " + config.maxPositions() + " positions");
        }
        int biased = request.sampling().largestBiasedId();
        if (biased >= config.vocabSize()) {
            throw new GenerationRefusedException(GenerationRefusedException.Reason.INVALID,
                    "the logit bias names token id " + biased + ", outside the vocabulary [0, " + config.vocabSize() + ")");
        }
        return prompt;
    }
}
