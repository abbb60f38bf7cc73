package io.graphlane.backend.gpu.nccl;

import io.graphlane.core.GraphlaneException;

/** The members of a collective disagreed on its descriptor; nothing was sent. Names the first member that differs. */
public final class CollectiveMismatchException extends GraphlaneException {
    private static final long serialVersionUID = 1L;

    public CollectiveMismatchException(int firstDiffering, CollectiveDescriptor expected, CollectiveDescriptor found) {
        super("collective descriptors differ: rank " + firstDiffering + " is about to run " + found + " but rank 0 runs " + expected
                + "; every member must call the same collectives in the same order with the same shapes");
    }
}
