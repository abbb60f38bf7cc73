package io.graphlane.inference.chat;

import io.graphlane.core.GraphlaneException;

/**
 * A chat template refused a conversation ({@code raise_exception(...)} in the template, with its message as written)
 * or failed to render it: the caller's messages do not fit the model's template.
 */
public final class ChatTemplateException extends GraphlaneException {
    private static final long serialVersionUID = 1L;

    public ChatTemplateException(String message) {
        super(message);
    }
}
