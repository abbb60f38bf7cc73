package io.graphlane.backend.gpu.nccl;

import java.util.Arrays;
import java.util.Objects;

/**
 * Descriptor consensus among the ranks of one JVM: each round, every rank proposes, the last to
 * arrive compares all proposals with rank 0's, and every rank then returns or throws the same
 * {@link CollectiveMismatchException} naming the lowest rank that differs.
 */
public final class InProcessConsensus implements DescriptorConsensus {
    private final int members;
    private final CollectiveDescriptor[] proposals;
    private int arrived;
    private long round;
    private CollectiveMismatchException verdict;

    public InProcessConsensus(int members) {
        if (members < 1) {
            throw new IllegalArgumentException("consensus group: members must be >= 1, got " + members);
        }
        this.members = members;
        this.proposals = new CollectiveDescriptor[members];
    }

    @Override
    public synchronized void agree(int rank, CollectiveDescriptor mine) throws InterruptedException {
        Objects.checkIndex(rank, members);
        Objects.requireNonNull(mine, "descriptor");
        if (proposals[rank] != null) {
            throw new IllegalStateException("rank " + rank + " proposed twice in consensus round " + round);
        }
        long myRound = round;
        proposals[rank] = mine;
        if (++arrived == members) {
            verdict = compare(proposals);
            Arrays.fill(proposals, null);
            arrived = 0;
            round++;
            notifyAll();
        } else {
            while (round == myRound) {
                wait();
            }
        }
        if (verdict != null) {
            throw verdict;
        }
    }

    /** The mismatch of the lowest rank whose proposal differs from rank 0's, or null when all agree. */
    static CollectiveMismatchException compare(CollectiveDescriptor[] proposals) {
        for (int r = 1; r < proposals.length; r++) {
            if (!proposals[r].equals(proposals[0])) {
                return new CollectiveMismatchException(r, proposals[0], proposals[r]);
            }
        }
        return null;
    }
}
