package io.graphlane.testkit.ledger;

import io.graphlane.core.GraphlaneException;

/** Closing a ledger-tracked resource failed; the release itself was recorded, the resource's own error is the cause. */
public final class ReleaseFailedException extends GraphlaneException {
    private static final long serialVersionUID = 1L;

    ReleaseFailedException(String resource, String completions, Exception cause) {
        super("releasing resource '" + resource + "'" + (completions.isEmpty() ? "" : " (held until " + completions + ")")
                + " failed while closing it: " + cause.getMessage(), cause);
    }
}
