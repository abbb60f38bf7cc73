package io.graphlane.inference.pipeline;

import io.graphlane.inference.api.GenerationRefusedException;
import io.graphlane.inference.api.GenerationRequest;
import io.graphlane.inference.backend.CacheMemory;
import io.graphlane.inference.llama.LlamaConfig;
import io.graphlane.scheduler.pipeline.KvBudget;
import io.graphlane.scheduler.pipeline.KvBudgetExceededException;
import io.graphlane.scheduler.pipeline.PipelineOverloadedException;
import io.graphlane.scheduler.pipeline.PipelineStoppedException;
import java.util.function.LongSupplier;

/** The admission checks every engine applies to a request for a Llama-family model, and how its refusals read to a client. */
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
        long total = (long) prompt.length + request.maxNewTokens();
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

    /**
     * Refuses a request whose KV-cache reservation ({@code promptTokens} plus {@code maxNewTokens} positions) is larger
     * than the whole of {@code budget}: it could never run, however long it waited.
     *
     * @throws GenerationRefusedException (INVALID, about {@code max_tokens}) naming the lengths, the budget and what fits
     */
    public static void fitsKvBudget(int promptTokens, int maxNewTokens, KvBudget budget) {
        long positions = (long) promptTokens + maxNewTokens;
        if (!budget.fits(positions)) {
            long room = budget.positions();
            String fits = room > promptTokens ? "send max_tokens of at most " + (room - promptTokens) + " with this prompt"
                    : "send a prompt of fewer than " + room + " tokens";
            throw new GenerationRefusedException(GenerationRefusedException.Reason.INVALID, "max_tokens",
                    "the prompt (" + promptTokens + " tokens) plus max_tokens (" + maxNewTokens + ") is " + positions
                            + " positions of KV cache (" + CacheMemory.format(budget.reservation(positions))
                            + "), more than this server's whole KV-cache budget of " + room + " positions ("
                            + CacheMemory.format(budget.bytes()) + "); " + fits);
        }
    }

    /**
     * Submits with {@code submit}, turning the engine's refusals into the generator's: a full engine OVERLOADED, a stopped
     * one UNAVAILABLE, a reservation that could never fit INVALID (about {@code max_tokens}), each with a message for
     * the client. Returns the request id.
     */
    public static long admitted(LongSupplier submit) {
        try {
            return submit.getAsLong();
        } catch (PipelineOverloadedException e) {
            throw new GenerationRefusedException(GenerationRefusedException.Reason.OVERLOADED, e.getMessage());
        } catch (PipelineStoppedException e) {
            throw new GenerationRefusedException(GenerationRefusedException.Reason.UNAVAILABLE,
                    "the model is not serving: its engine has stopped; retry on another instance");
        } catch (KvBudgetExceededException e) {
            throw new GenerationRefusedException(GenerationRefusedException.Reason.INVALID, "max_tokens", "the prompt ("
                    + e.promptTokens() + " tokens) plus max_tokens (" + e.maxNewTokens() + ") needs more KV-cache memory ("
                    + CacheMemory.format(e.reservation()) + ") than this server's whole budget of " + CacheMemory.format(e.budget())
                    + "; send a shorter prompt or a smaller max_tokens");
        }
    }
}
