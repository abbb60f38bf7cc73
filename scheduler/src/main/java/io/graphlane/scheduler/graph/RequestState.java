package io.graphlane.scheduler.graph;

/** Where one request (one graph run) stands: active → finished | cancelled | deadline-exceeded | failed. */
public enum RequestState {
    /** Nodes are still outstanding. */
    ACTIVE,
    /** Every node committed. */
    FINISHED,
    /** Cancelled by the caller; submitted work ran to its exact completion, unpublished. */
    CANCELLED,
    /** The deadline passed before every node was submitted; nodes not yet submitted never ran. */
    DEADLINE_EXCEEDED,
    /** A node failed (its dependents were poisoned, independent branches finished) or a lane refused work. */
    FAILED
}
