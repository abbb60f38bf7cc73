package io.graphlane.scheduler.pipeline;

import io.graphlane.core.GraphlaneException;

/** The failure that ends a request whose listener threw on one of its tokens; only that request ends. */
public final class ListenerFailedException extends GraphlaneException {
    private static final long serialVersionUID = 1L;

    public ListenerFailedException(long requestId, Throwable thrown) {
        super("the listener of request " + requestId + " failed on a token: " + thrown, thrown);
    }
}
