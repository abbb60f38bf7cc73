package io.graphlane.backend.cpu.collective;

import java.time.Duration;

/** A member did not take part in a collective within the group's timeout; the others fail instead of hanging. */
public final class MemberAbsentException extends CollectiveException {
    private static final long serialVersionUID = 1L;

    /** Member {@code member} sent nothing to {@code waiting} for {@code timeout} during {@code phase}. */
    public MemberAbsentException(String group, long sequence, int member, int waiting, String phase, Duration timeout) {
        super(group, sequence, member, "collective group " + group + ": member " + member + " did not arrive within " + timeout
                + " for collective #" + sequence + " (member " + waiting + " was waiting for its " + phase
                + "); check that every member calls the same collectives, or raise the group's member timeout");
    }
}
