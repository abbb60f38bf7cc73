package io.graphlane.cluster.collective;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.backend.cpu.collective.CollectiveException;
import io.graphlane.backend.cpu.collective.CollectiveSettings;
import io.graphlane.backend.cpu.collective.CpuCollectiveMember;
import io.graphlane.backend.cpu.collective.DescriptorMismatchException;
import io.graphlane.backend.cpu.collective.InProcessTransport;
import io.graphlane.backend.cpu.collective.MemberLostException;
import io.graphlane.backend.gpu.nccl.CollectiveDescriptor;
import io.graphlane.backend.gpu.nccl.CollectiveMismatchException;
import io.graphlane.backend.gpu.nccl.NcclUniqueIds;
import java.nio.FloatBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@link NcclControlPlane} over a CPU collective group in one JVM, each rank on its own thread as a lane's worker
 * would be: the id rank 0 creates reaches every rank, descriptors agree or fail on every rank naming the same rank, and
 * a failing rank 0 fails the others at once. (Across nodes: {@code ClusterNcclControlPlaneTest}.)
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class NcclControlPlaneTest {
    private static final ExecutorService RANKS = Executors.newFixedThreadPool(4);
    // Long enough that a failure seen within the test's timeout came from a departure, not a member timing out.
    private static final CollectiveSettings SETTINGS = new CollectiveSettings(Duration.ofMinutes(5), CollectiveSettings.DEFAULT_CHUNK_FLOATS);

    @AfterAll
    static void stop() {
        RANKS.shutdownNow();
    }

    private static List<NcclControlPlane> planes(String group, int size) {
        InProcessTransport transport = new InProcessTransport(size);
        List<NcclControlPlane> planes = new ArrayList<>();
        for (int r = 0; r < size; r++) {
            planes.add(NcclControlPlane.over(CpuCollectiveMember.over(group, r, transport, SETTINGS)));
        }
        return planes;
    }

    /** Runs {@code body} for every rank on its own thread; the outcomes in rank order. */
    @FunctionalInterface
    private interface RankBody<T> {
        T run(int rank) throws Exception;
    }

    private static <T> List<Future<T>> onEveryRank(int size, RankBody<T> body) {
        List<Future<T>> outcomes = new ArrayList<>();
        for (int r = 0; r < size; r++) {
            int rank = r;
            outcomes.add(RANKS.submit(() -> body.run(rank)));
        }
        return outcomes;
    }

    private static Throwable failure(Future<?> outcome) {
        return assertThrows(ExecutionException.class, () -> outcome.get(30, TimeUnit.SECONDS)).getCause();
    }

    private static byte[] someId() {
        byte[] id = new byte[NcclUniqueIds.BYTES];
        for (int i = 0; i < id.length; i++) {
            id[i] = (byte) (i * 37 - 128); // every byte value class: negative, zero, positive
        }
        return id;
    }

    @Test
    void theIdRankZeroCreatesReachesEveryRankAndOnlyRankZeroCreatesOne() throws Exception {
        for (int size = 1; size <= 4; size++) {
            List<NcclControlPlane> planes = planes("ids-" + size, size);
            AtomicInteger created = new AtomicInteger();
            byte[] id = someId();
            List<Future<byte[]>> received = onEveryRank(size, r -> planes.get(r).shareUniqueId(() -> {
                created.incrementAndGet();
                assertEquals(0, r, "only rank 0 creates the id");
                return id.clone();
            }));
            for (int r = 0; r < size; r++) {
                assertArrayEquals(id, received.get(r).get(30, TimeUnit.SECONDS), "rank " + r + " of " + size);
            }
            assertEquals(1, created.get(), "ids created in a group of " + size);
        }
    }

    @Test
    void equalDescriptorsAgreeRoundAfterRound() throws Exception {
        List<NcclControlPlane> planes = planes("agree", 3);
        List<Future<Integer>> rounds = onEveryRank(3, r -> {
            for (long s = 0; s < 5; s++) {
                planes.get(r).consensus().agree(r, new CollectiveDescriptor(s, "allReduce", "F32", 4096, 4096));
            }
            return r;
        });
        for (int r = 0; r < 3; r++) {
            assertEquals(r, rounds.get(r).get(30, TimeUnit.SECONDS));
        }
    }

    @Test
    void aDifferingDescriptorFailsEveryRankNamingTheLowestRankThatDiffers() throws Exception {
        List<NcclControlPlane> planes = planes("differ", 4);
        CollectiveDescriptor common = new CollectiveDescriptor(7, "allGather", "F32", 3, 64);
        List<Future<Void>> outcomes = onEveryRank(4, r -> {
            CollectiveDescriptor mine = r == 2 ? new CollectiveDescriptor(7, "allGather", "F32", 5, 64)
                    : r == 3 ? new CollectiveDescriptor(7, "allToAll", "F32", 3, 64) : common;
            planes.get(r).agree(r, mine);
            return null;
        });
        for (int r = 0; r < 4; r++) {
            CollectiveMismatchException e = assertInstanceOf(CollectiveMismatchException.class, failure(outcomes.get(r)), "rank " + r);
            assertTrue(e.getMessage().contains("rank 2") && e.getMessage().contains("[5 x 64]") && e.getMessage().contains("[3 x 64]"),
                    e.getMessage());
        }
    }

    @Test
    void whenRankZeroCannotCreateTheIdEveryOtherRankFailsNamingIt() throws Exception {
        List<NcclControlPlane> planes = planes("no-nccl", 3);
        IllegalStateException missing = new IllegalStateException("libnccl.so.2 not found");
        List<Future<byte[]>> outcomes = onEveryRank(3, r -> planes.get(r).shareUniqueId(() -> {
            throw missing;
        }));
        assertSame(missing, failure(outcomes.get(0)));
        for (int r = 1; r < 3; r++) {
            MemberLostException lost = assertInstanceOf(MemberLostException.class, failure(outcomes.get(r)), "rank " + r);
            assertEquals(0, lost.member());
            assertTrue(lost.getMessage().contains("libnccl.so.2 not found"), lost.getMessage());
        }
    }

    @Test
    void ranksOutOfStepFailWithTheGroupsDescriptorMismatchInsteadOfHanging() throws Exception {
        List<NcclControlPlane> planes = planes("out-of-step", 2);
        List<Future<Object>> outcomes = onEveryRank(2, r -> {
            if (r == 0) {
                return planes.get(0).shareUniqueId(NcclControlPlaneTest::someId);
            }
            planes.get(1).agree(1, new CollectiveDescriptor(0, "allReduce", "F32", 1, 1));
            return null;
        });
        for (int r = 0; r < 2; r++) {
            assertInstanceOf(DescriptorMismatchException.class, failure(outcomes.get(r)), "rank " + r);
        }
    }

    @Test
    void aNameTooLongToTravelIsRefusedNamingTheFieldAndTheOthersAreToldThisRankLeft() throws Exception {
        List<NcclControlPlane> planes = planes("long-name", 2);
        String op = "allReduceWithAVeryLongDescriptiveName";
        List<Future<Void>> outcomes = onEveryRank(2, r -> {
            planes.get(r).agree(r, new CollectiveDescriptor(0, r == 1 ? op : "allReduce", "F32", 1, 1));
            return null;
        });
        IllegalArgumentException refused = assertInstanceOf(IllegalArgumentException.class, failure(outcomes.get(1)));
        assertTrue(refused.getMessage().contains("operation '" + op + "' is " + op.length() + " characters, at most 32"),
                refused.getMessage());
        CollectiveException lost = assertInstanceOf(CollectiveException.class, failure(outcomes.get(0)));
        assertEquals(1, lost.member());
        assertThrows(IllegalArgumentException.class, () -> planes.get(0).agree(1, new CollectiveDescriptor(0, "allReduce", "F32", 1, 1)),
                "a plane agrees only as its own rank");
    }

    @Test
    void descriptorsSurviveTheirEncodingWholeIncludingExtremeValues() {
        FloatBuffer buffer = FloatBuffer.allocate(NcclControlPlane.DESCRIPTOR_FLOATS);
        for (CollectiveDescriptor d : List.of(new CollectiveDescriptor(Long.MAX_VALUE, "allToAll", "BF16", Integer.MAX_VALUE, 0),
                new CollectiveDescriptor(0, "", "", -1, Integer.MIN_VALUE),
                new CollectiveDescriptor(1L << 40, "a".repeat(32), "ü\uFFFF", 123_456, 65_536))) {
            NcclControlPlane.encode(d, buffer);
            assertEquals(d, NcclControlPlane.decode(buffer, 0));
        }
    }
}
