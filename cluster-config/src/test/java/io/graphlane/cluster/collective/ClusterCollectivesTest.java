package io.graphlane.cluster.collective;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.backend.cpu.collective.CollectiveException;
import io.graphlane.backend.cpu.collective.CollectiveSettings;
import io.graphlane.backend.cpu.collective.CpuCollectiveMember;
import io.graphlane.backend.cpu.collective.MemberLostException;
import io.graphlane.backend.cpu.collective.ReduceOp;
import io.graphlane.backend.cpu.nn.CpuNeuralOps;
import io.graphlane.backend.cpu.nn.CpuTensor;
import io.graphlane.actors.wire.WireFormatException;
import io.graphlane.backend.cpu.collective.CollectiveDescriptor;
import io.graphlane.backend.cpu.collective.CollectiveKind;
import io.graphlane.backend.cpu.collective.CollectiveMessage;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;
import org.apache.pekko.actor.ExtendedActorSystem;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.cluster.ClusterEvent;
import org.apache.pekko.cluster.Member;
import org.apache.pekko.cluster.typed.Cluster;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;

/**
 * One member per node, each made with {@link CpuCollectiveMember#over} on its node's transport and run on its own thread,
 * as ranks on different machines would: streaming past the credit window in frames larger than Artery's ordinary
 * frame, the join's failures, a peer unreachable for a while, and the loss of a node mid-collective. The last test
 * terminates a node, so they run in order.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class ClusterCollectivesTest {
    private static final CpuNeuralOps OPS = new CpuNeuralOps();
    private static final ExecutorService LANES = Executors.newFixedThreadPool(3);
    private static List<ActorSystem<Void>> nodes;

    @BeforeAll
    static void formCluster() throws Exception {
        nodes = CollectiveNodes.cluster(3, "socket");
    }

    @AfterAll
    static void stopCluster() throws Exception {
        LANES.shutdownNow();
        CollectiveNodes.terminate(nodes);
    }

    private static List<CpuCollectiveMember> members(String group, List<ClusterCollectiveTransport> transports, CollectiveSettings settings) {
        List<CpuCollectiveMember> members = new ArrayList<>();
        for (ClusterCollectiveTransport t : transports) {
            members.add(CpuCollectiveMember.over(group, t.localRank(), t, settings));
        }
        return members;
    }

    /** Every rank sums {@code values} of its rank, a {@code rows x cols} tensor, on its own lane: the results by rank. */
    private static List<Future<float[]>> sumOnLanes(List<CpuCollectiveMember> members, int rows, int cols, IntFunction<float[]> values) {
        List<Future<float[]>> results = new ArrayList<>();
        for (int r = 0; r < members.size(); r++) {
            int rank = r;
            results.add(LANES.submit(() -> {
                CpuTensor t = OPS.fromHost(values.apply(rank), rows, cols);
                try {
                    members.get(rank).allReduceInPlace(t, ReduceOp.SUM);
                    float[] out = new float[rows * cols];
                    OPS.toHost(t, out);
                    return out;
                } finally {
                    OPS.release(t);
                }
            }));
        }
        return results;
    }

    /**
     * Both framing paths (Artery's ByteBuffer one, which the payload sockets use too, and the byte-array one) write the
     * same frames and read each other's; a hello carries its payload socket, and one without it reads as the Artery plane.
     */
    @Test
    @Order(0)
    void bothFramingPathsReadEachOthersFrames() throws Exception {
        CollectiveWireSerializer wire = new CollectiveWireSerializer((ExtendedActorSystem) Adapter.toClassic(nodes.get(0)));
        float[] floats = {1.5f, -2f, Float.MIN_VALUE, Float.NaN, 3e38f};
        List<CollectiveMessage> messages = List.of(
                new CollectiveMessage.Chunk(7, 123_456_789_012L, FloatBuffer.wrap(floats), null),
                new CollectiveMessage.Descriptor(new CollectiveDescriptor(3, CollectiveKind.ALL_TO_ALL, null, "F32", 0, 5, new int[] {0, 2, 0})),
                new CollectiveMessage.Descriptor(new CollectiveDescriptor(4, CollectiveKind.ALL_REDUCE, ReduceOp.SUM, "F32", 2, 3, null)),
                new CollectiveMessage.Left(2, "member 2 went away"));
        for (CollectiveMessage m : messages) {
            CollectiveRankActor.Deliver sent = new CollectiveRankActor.Deliver(1, m);
            ByteBuffer frame = ByteBuffer.allocateDirect(4096).order(ByteOrder.LITTLE_ENDIAN);
            wire.toBinary(sent, frame);
            frame.flip();
            byte[] bytes = new byte[frame.remaining()];
            frame.duplicate().get(bytes);
            assertArrayEquals(wire.toBinary(sent), bytes, "the same frame on both paths for " + m);
            for (Object read : List.of(wire.fromBinary(frame, ""), wire.fromBinary(bytes, (Class<?>) null))) {
                CollectiveRankActor.Deliver got = (CollectiveRankActor.Deliver) read;
                assertEquals(1, got.from());
                if (m instanceof CollectiveMessage.Chunk c) {
                    CollectiveMessage.Chunk back = (CollectiveMessage.Chunk) got.message();
                    assertEquals(c.sequence(), back.sequence());
                    assertEquals(c.offset(), back.offset());
                    float[] values = new float[back.values().remaining()];
                    back.values().get(0, values);
                    assertArrayEquals(floats, values);
                } else {
                    assertEquals(m, got.message());
                }
            }
        }
        ActorRef<CollectiveRankActor.Command> someone = nodes.get(0).deadLetters().unsafeUpcast();
        CollectiveRankActor.Hello hello = new CollectiveRankActor.Hello("g", 1, 3, someone, someone, "10.0.0.7", 40_123, -5L);
        assertEquals(hello, wire.fromBinary(wire.toBinary(hello), (Class<?>) null), "a hello with its payload socket");
        // A hello of the first version ends after the credits ref: it reads as the Artery plane (port 0).
        CollectiveRankActor.Hello artery = new CollectiveRankActor.Hello("g", 1, 3, someone, someone, "", 0, 0L);
        byte[] current = wire.toBinary(artery);
        byte[] firstVersion = java.util.Arrays.copyOf(current, current.length - 10);
        assertEquals(artery, wire.fromBinary(firstVersion, (Class<?>) null), "a hello of the first version");
        ByteBuffer truncated = ByteBuffer.allocate(8);
        truncated.put((byte) (CollectiveWireSerializer.DELIVER_ID + 2)).put((byte) 1).put((byte) 1).flip();
        assertThrows(WireFormatException.class, () -> wire.fromBinary(truncated, ""));
    }

    /**
     * 100 000-float chunks (400 KB) and a tensor of 3.3 million floats over the payload sockets: each ring step streams
     * many chunks, more than the window, on every link, so each link's reader waits for its member to poll.
     */
    @Test
    @Order(1)
    void aLargeAllReduceStreamsInChunksAndSumsExactly() throws Exception {
        CollectiveSettings settings = new CollectiveSettings(Duration.ofSeconds(30), 100_000);
        List<ClusterCollectiveTransport> transports = CollectiveNodes.join(nodes, "stream", 3, settings);
        List<CpuCollectiveMember> members = members("stream", transports, settings);
        int rows = 1031;
        int cols = 3203;
        List<Future<float[]>> results = sumOnLanes(members, rows, cols, rank -> {
            float[] values = new float[rows * cols];
            for (int i = 0; i < values.length; i++) {
                values[i] = (rank + 1) * (i % 1009);
            }
            return values;
        });
        float[] expected = new float[rows * cols];
        for (int i = 0; i < expected.length; i++) {
            expected[i] = 6 * (i % 1009);
        }
        for (int r = 0; r < 3; r++) {
            assertArrayEquals(expected, results.get(r).get(60, TimeUnit.SECONDS), "rank " + r);
        }
        CollectiveNodes.closeAll(transports);
    }

    @Test
    @Order(2)
    void aJoinWithoutEveryRankFailsNamingTheMissingOnes() {
        CompletableFuture<ClusterCollectiveTransport> alone = ClusterCollectives.join(nodes.get(0), "incomplete", 0, 3,
                CollectiveSettings.defaults(), Duration.ofSeconds(1)).toCompletableFuture();
        ExecutionException failed = assertThrows(ExecutionException.class, () -> alone.get(20, TimeUnit.SECONDS));
        assertInstanceOf(ClusterCollectiveException.class, failed.getCause());
        assertTrue(failed.getCause().getMessage().contains("ranks [1, 2] did not join"), failed.getCause().getMessage());
    }

    @Test
    @Order(3)
    void aRankClaimedTwiceOrAChunkPastTheFrameIsRefused() {
        assertThrows(IllegalArgumentException.class, () -> ClusterCollectives.join(nodes.get(0), "g", 3, 3, CollectiveSettings.defaults()));
        IllegalArgumentException tooLarge = assertThrows(IllegalArgumentException.class,
                () -> ClusterCollectives.requireChunkFits(CollectiveNodes.config("artery"), "g", 2 << 20));
        assertTrue(tooLarge.getMessage().contains("maximum-large-frame-size"), tooLarge.getMessage());
        IllegalArgumentException pastSocketFrame = assertThrows(IllegalArgumentException.class, () -> ClusterCollectives.join(nodes.get(0),
                "g", 0, 3, new CollectiveSettings(Duration.ofSeconds(5), ClusterCollectives.MAX_SOCKET_CHUNK_FLOATS + 1)));
        assertTrue(pastSocketFrame.getMessage().contains("payload socket frame"), pastSocketFrame.getMessage());
        IllegalArgumentException badPlane = assertThrows(IllegalArgumentException.class, () -> ClusterCollectives.payload(
                com.typesafe.config.ConfigFactory.parseString("graphlane.cluster.collective.payload = carrier-pigeon")));
        assertTrue(badPlane.getMessage().contains("graphlane.cluster.collective.payload must be socket or artery, got 'carrier-pigeon'"),
                badPlane.getMessage());
        CompletableFuture<ClusterCollectiveTransport> first = ClusterCollectives.join(nodes.get(0), "twice", 0, 2,
                CollectiveSettings.defaults(), Duration.ofSeconds(2)).toCompletableFuture();
        CompletableFuture<ClusterCollectiveTransport> again = ClusterCollectives.join(nodes.get(0), "twice", 0, 2,
                CollectiveSettings.defaults(), Duration.ofSeconds(2)).toCompletableFuture();
        ExecutionException refused = assertThrows(ExecutionException.class, () -> again.get(20, TimeUnit.SECONDS));
        assertTrue(refused.getCause().getMessage().contains("joined that group as that rank already"), refused.getCause().getMessage());
        assertThrows(ExecutionException.class, () -> first.get(20, TimeUnit.SECONDS), "rank 1 never joined");
    }

    /**
     * A peer's node that node 0's failure detector misses for a while and then hears again (as a node starting under load
     * can be, or every node of a JVM in a long GC pause) ends nothing: here on the socket plane (the Artery plane treats it
     * alike), the payload sockets carry on, no member is told of a loss, and the group keeps summing. (Before, rank 0 reported rank 1 lost and closed its socket, and the group, which its stage still ran
     * as, failed its next collective with "closed before it said goodbye".)
     */
    @Test
    @Order(4)
    void aPeerUnreachableForAWhileKeepsItsSocketGroup() throws Exception {
        CollectiveSettings settings = new CollectiveSettings(Duration.ofSeconds(30), 1000);
        List<ClusterCollectiveTransport> transports = CollectiveNodes.join(nodes, "flap", 3, settings);
        List<CpuCollectiveMember> members = members("flap", transports, settings);
        Member peer = Cluster.get(nodes.get(1)).selfMember();
        // What node 0's cluster publishes, to the rank actor among others, when reachability of rank 1's node flaps.
        org.apache.pekko.event.EventStream events = Adapter.toClassic(nodes.get(0)).eventStream();
        events.publish(new ClusterEvent.UnreachableMember(peer));
        events.publish(new ClusterEvent.ReachableMember(peer));
        // Enough rounds for rank 0's actor to have handled both events long before the last one.
        for (int round = 1; round <= 40; round++) {
            int value = round;
            List<Future<float[]>> sums = sumOnLanes(members, 3, 1000, rank -> {
                float[] values = new float[3 * 1000];
                java.util.Arrays.fill(values, value * (rank + 1));
                return values;
            });
            float[] expected = new float[3 * 1000];
            java.util.Arrays.fill(expected, 6f * round);
            for (int r = 0; r < 3; r++) {
                assertArrayEquals(expected, sums.get(r).get(30, TimeUnit.SECONDS), "round " + round + ", rank " + r);
            }
        }
        CollectiveNodes.closeAll(transports);
    }

    /**
     * Ranks 0 and 1 wait inside an all-reduce (the member timeout is a minute, so only the loss can end it) when the node
     * of rank 2 terminates: both fail within the cluster's fault bounds, naming member 2.
     */
    @Test
    @Order(5)
    void aNodeLostMidCollectiveFailsEveryOtherMemberNamingItsRank() throws Exception {
        CollectiveSettings settings = new CollectiveSettings(Duration.ofSeconds(60), 1000);
        List<ClusterCollectiveTransport> transports = CollectiveNodes.join(nodes, "loss", 3, settings);
        List<CpuCollectiveMember> members = members("loss", transports, settings);
        CpuTensor[] inputs = {OPS.fromHost(new float[12_000], 3, 4000), OPS.fromHost(new float[12_000], 3, 4000)};
        List<Future<?>> waiting = new ArrayList<>();
        for (int r = 0; r < 2; r++) {
            int rank = r;
            waiting.add(LANES.submit(() -> {
                members.get(rank).allReduceInPlace(inputs[rank], ReduceOp.SUM);
                return null;
            }));
        }
        long killed = System.nanoTime();
        nodes.get(2).terminate();
        for (int r = 0; r < 2; r++) {
            ExecutionException e = assertThrows(ExecutionException.class, () -> waiting.get(0).get(20, TimeUnit.SECONDS));
            MemberLostException lost = assertInstanceOf(MemberLostException.class, e.getCause(), "rank " + r);
            assertEquals(2, lost.member(), lost.getMessage());
            assertTrue(lost.getMessage().contains("member 2"), lost.getMessage());
            waiting.remove(0);
        }
        double seconds = (System.nanoTime() - killed) / 1e9;
        assertTrue(seconds < 15, "the others failed only after " + seconds + " s");
        CollectiveException refused = assertThrows(CollectiveException.class,
                () -> members.get(0).allReduceInPlace(inputs[0], ReduceOp.SUM), "the group is poisoned after the loss");
        assertTrue(refused.getMessage().contains("member 2"), refused.getMessage());
        for (CpuTensor t : inputs) {
            OPS.release(t);
        }
    }
}
