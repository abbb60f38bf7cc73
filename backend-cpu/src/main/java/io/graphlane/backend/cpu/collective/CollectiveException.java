package io.graphlane.backend.cpu.collective;

import io.graphlane.core.GraphlaneException;

/**
 * A collective failed on a member of a group; the message names the group, the collective's
 * sequence number, the member at fault (the one that differed, was absent or left) and why.
 */
public class CollectiveException extends GraphlaneException {
    private static final long serialVersionUID = 1L;

    private final String group;
    private final long sequence;
    private final int member;

    /** A failure of collective {@code sequence} of {@code group} caused by member {@code member}. */
    public CollectiveException(String group, long sequence, int member, String message) {
        super(message);
        this.group = group;
        this.sequence = sequence;
        this.member = member;
    }

    /** A failure with an underlying cause. */
    public CollectiveException(String group, long sequence, int member, String message, Throwable cause) {
        super(message, cause);
        this.group = group;
        this.sequence = sequence;
        this.member = member;
    }

    /** The group's name. */
    public String group() {
        return group;
    }

    /** The sequence number of the collective that failed. */
    public long sequence() {
        return sequence;
    }

    /** The member at fault: the first that differed, the one that was absent, or the one that left. */
    public int member() {
        return member;
    }
}
