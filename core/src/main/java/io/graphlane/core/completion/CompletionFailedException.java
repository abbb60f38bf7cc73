package io.graphlane.core.completion;

import io.graphlane.core.GraphlaneException;

/** Thrown by {@link Completion#awaitSuccess()} when the awaited work failed; the cause is the recorded failure. */
public class CompletionFailedException extends GraphlaneException {
    private static final long serialVersionUID = 1L;

    public CompletionFailedException(String message, Throwable cause) {
        super(message, cause);
    }

    static CompletionFailedException of(Completion completion, Throwable cause) {
        if (cause instanceof CompletionFailedException known) {
            return known;
        }
        return new CompletionFailedException(completion.label() + " failed: " + cause.getMessage(), cause);
    }
}
