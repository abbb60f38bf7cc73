package io.graphlane.backend.cpu.collective;

/** A collective on a group whose order can no longer be proven (an earlier collective failed); refused at once. */
public final class CollectiveGroupPoisonedException extends CollectiveException {
    private static final long serialVersionUID = 1L;

    /** Member {@code rank} refuses collective {@code sequence} because of {@code cause}. */
    public CollectiveGroupPoisonedException(String group, long sequence, int rank, CollectiveException cause) {
        super(group, sequence, cause.member(), "collective group " + group + " is poisoned on member " + rank + " since collective #"
                + cause.sequence() + " failed (" + cause.getMessage() + "); make a new group", cause);
    }
}
