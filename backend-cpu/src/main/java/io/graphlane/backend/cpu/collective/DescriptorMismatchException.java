package io.graphlane.backend.cpu.collective;

/** The members announced different collectives; every member fails with this error, naming the first member that differs from member 0. */
public final class DescriptorMismatchException extends CollectiveException {
    private static final long serialVersionUID = 1L;

    private final CollectiveDescriptor expected;
    private final CollectiveDescriptor found;

    /** Member {@code member} announced {@code found} where member 0 announced {@code expected}. */
    public DescriptorMismatchException(String group, int member, CollectiveDescriptor expected, CollectiveDescriptor found, String difference) {
        super(group, expected.sequence(), member, "collective group " + group + ": descriptor consensus failed for collective #"
                + expected.sequence() + ": member " + member + " differs from member 0 in " + difference + " (member 0 announced "
                + expected + ", member " + member + " announced " + found + "); every member must call the same collectives in the same order");
        this.expected = expected;
        this.found = found;
    }

    /** Member 0's descriptor. */
    public CollectiveDescriptor expected() {
        return expected;
    }

    /** The differing member's descriptor. */
    public CollectiveDescriptor found() {
        return found;
    }
}
