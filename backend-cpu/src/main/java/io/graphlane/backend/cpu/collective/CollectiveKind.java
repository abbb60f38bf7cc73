package io.graphlane.backend.cpu.collective;

/** The collective a descriptor announces. */
public enum CollectiveKind {
    /** Element-wise reduction of equal-shaped tensors; every member gets the result. */
    ALL_REDUCE("all-reduce"),
    /** Concatenation of every member's rows in member order; row counts may differ, columns may not. */
    ALL_GATHER("all-gather"),
    /** Personalized exchange: member i's j-th block of rows goes to member j; counts may be zero. */
    ALL_TO_ALL("all-to-all");

    private final String label;

    CollectiveKind(String label) {
        this.label = label;
    }

    /** The name used in errors and benchmark output, such as {@code all-reduce}. */
    public String label() {
        return label;
    }

    @Override
    public String toString() {
        return label;
    }
}
