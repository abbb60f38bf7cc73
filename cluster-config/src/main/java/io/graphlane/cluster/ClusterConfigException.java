package io.graphlane.cluster;

import io.graphlane.core.GraphlaneException;

/** A node's cluster settings are refused: the message names the option, the expected and the found value. */
public final class ClusterConfigException extends GraphlaneException {
    private static final long serialVersionUID = 1L;

    /** An error whose message names the option, the expected and the found value. */
    public ClusterConfigException(String message) {
        super(message);
    }
}
