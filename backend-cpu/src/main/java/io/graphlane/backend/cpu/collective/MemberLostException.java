package io.graphlane.backend.cpu.collective;

/** A member left the group (its work failed, it timed out or it was lost); every member waiting on the group fails with this. */
public final class MemberLostException extends CollectiveException {
    private static final long serialVersionUID = 1L;

    /** Member {@code member} left during collective {@code sequence}, for {@code reason}. */
    public MemberLostException(String group, long sequence, int member, String reason) {
        super(group, sequence, member, "collective group " + group + ": member " + member + " left the group during collective #"
                + sequence + ": " + reason);
    }
}
