package io.graphlane.backend.gpu.nccl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Descriptor consensus before every collective: agreement lets all pass, a mismatch fails all members naming the first that differs. */
@Timeout(value = 20, unit = TimeUnit.SECONDS)
class InProcessConsensusTest {

    @Test
    void identicalDescriptorsPassOnEveryMemberRoundAfterRound() throws Exception {
        List<Throwable> outcomes = run(3, rank -> new CollectiveDescriptor(0, "allReduce", "F32", 4, 8), 5);
        outcomes.forEach(t -> assertNull(t, "every member agrees"));
    }

    @Test
    void aMismatchFailsEveryMemberAndNamesTheFirstThatDiffers() throws Exception {
        List<Throwable> outcomes = run(4, rank -> new CollectiveDescriptor(7, "allGather", "F32", rank >= 2 ? 5 : 4, 8), 1);
        for (Throwable t : outcomes) {
            CollectiveMismatchException e = assertInstanceOf(CollectiveMismatchException.class, t);
            assertTrue(e.getMessage().contains("rank 2"), e.getMessage());
            assertTrue(e.getMessage().contains("#7 allGather F32[5 x 8]"), e.getMessage());
        }
    }

    @Test
    void membershipAndIdsAreValidatedBeforeNcclIsTouched() {
        assertThrows(IllegalArgumentException.class, () -> NcclCommunicator.validateMembership(0, 0));
        IllegalArgumentException rank = assertThrows(IllegalArgumentException.class, () -> NcclCommunicator.validateMembership(2, 2));
        assertTrue(rank.getMessage().contains("rank 2 is outside the group [0, 2)"), rank.getMessage());
        IllegalArgumentException id = assertThrows(IllegalArgumentException.class, () -> NcclUniqueIds.validate(new byte[64]));
        assertTrue(id.getMessage().contains("128 bytes, got 64 bytes"), id.getMessage());
        NcclUniqueIds.validate(new byte[128]);
    }

    private static List<Throwable> run(int members, java.util.function.IntFunction<CollectiveDescriptor> proposal, int rounds) throws Exception {
        InProcessConsensus consensus = new InProcessConsensus(members);
        ExecutorService pool = Executors.newFixedThreadPool(members);
        try {
            List<Future<Throwable>> futures = new ArrayList<>();
            for (int r = 0; r < members; r++) {
                int rank = r;
                futures.add(pool.submit(() -> {
                    for (int i = 0; i < rounds; i++) {
                        try {
                            consensus.agree(rank, proposal.apply(rank));
                        } catch (CollectiveMismatchException e) {
                            return e;
                        }
                    }
                    return null;
                }));
            }
            List<Throwable> outcomes = new ArrayList<>();
            for (Future<Throwable> f : futures) {
                outcomes.add(f.get(10, TimeUnit.SECONDS));
            }
            assertEquals(members, outcomes.size());
            return outcomes;
        } finally {
            pool.shutdownNow();
        }
    }
}
