package io.graphlane.scheduler.graph;

/**
 * Where one node's work stands (CONTRACTS.md, request lifecycle): queued → prepared → submitted →
 * committed | abandoned | failed. The lane reports a submission's exact completion and its outcome
 * in one message, so "completing" is not a separately observable state here.
 */
public enum WorkState {
    /** Held by the runner, not yet sent to its lane. */
    QUEUED,
    /** Sent to its lane actor, which holds it until its producers resolve and an in-flight slot frees. */
    PREPARED,
    /** Handed to the backend executor. */
    SUBMITTED,
    /** Ended successfully; its result may be read. */
    COMMITTED,
    /** Dropped before submission, or abandoned after it, because the request was cancelled or stopped early. */
    ABANDONED,
    /** Failed: its own work failed, a producer failed (poisoned), its lane refused it, or its deadline passed. */
    FAILED;

    /** Whether the work can no longer change state. */
    public boolean isTerminal() {
        return this == COMMITTED || this == ABANDONED || this == FAILED;
    }
}
