package io.graphlane.cluster.collective;

import io.graphlane.core.GraphlaneException;

/** A rank could not join its collective group across nodes, or its transport was used wrongly; the message says which rank and why. */
public final class ClusterCollectiveException extends GraphlaneException {
    private static final long serialVersionUID = 1L;

    /** An error naming the group, the rank and what went wrong. */
    public ClusterCollectiveException(String message) {
        super(message);
    }
}
