package io.graphlane.server;

import io.graphlane.inference.chat.ChatTemplateLimits;
import java.util.Objects;

/**
 * How an {@link OpenAiServer} prepares a request before it generates anything: reading its JSON, checking its fields
 * and sizes, rendering the chat template and tokenizing text all run on a pool of their own, off Pekko's dispatcher,
 * so a slow or large request never holds a thread that answers {@code /health} or other requests.
 *
 * <p>A text prompt (and each chat message's content, and a rendered chat prompt) is refused with a 400 before it is
 * tokenized when it has more UTF-8 bytes than the model can take: its maximum sequence length times the most bytes one
 * token of its vocabulary stands for (see {@link PromptBounds}); that limit follows from the model and has no setting.
 *
 * @param preparationThreads the threads that prepare requests
 * @param preparationQueue   the requests that may wait for one of them; one more is answered 429 with
 *                           {@code Retry-After}. 0: none wait
 * @param chatTemplate       what one render of the model's chat template may take; its output limit is lowered to the
 *                           model's prompt limit where that is smaller
 */
public record InputLimits(int preparationThreads, int preparationQueue, ChatTemplateLimits chatTemplate) {
    /** Two: enough that a slow request does not hold up the next, few enough that large ones cannot exhaust memory. */
    public static final int DEFAULT_PREPARATION_THREADS = 2;
    /** Sixteen requests waiting; each holds its body (at most the body limit) until it is prepared. */
    public static final int DEFAULT_PREPARATION_QUEUE = 16;

    public InputLimits {
        Objects.requireNonNull(chatTemplate, "chatTemplate");
        if (preparationThreads < 1) {
            throw new IllegalArgumentException("the request preparation threads must be >= 1, got " + preparationThreads);
        }
        if (preparationQueue < 0) {
            throw new IllegalArgumentException("the request preparation queue must be >= 0, got " + preparationQueue);
        }
    }

    /** Two preparation threads, sixteen waiting requests, the default chat template limits. */
    public static InputLimits defaults() {
        return new InputLimits(DEFAULT_PREPARATION_THREADS, DEFAULT_PREPARATION_QUEUE, ChatTemplateLimits.defaults());
    }

    public InputLimits withPreparation(int threads, int queue) {
        return new InputLimits(threads, queue, chatTemplate);
    }

    public InputLimits withChatTemplate(ChatTemplateLimits limits) {
        return new InputLimits(preparationThreads, preparationQueue, limits);
    }
}
