package io.graphlane.cluster.collective;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.AppenderBase;
import com.typesafe.config.ConfigFactory;
import io.graphlane.actors.lane.LaneProtocol;
import io.graphlane.actors.wire.ActivationFrame;
import io.graphlane.actors.wire.KryoWireSerializer;
import io.graphlane.actors.wire.PooledKryoSerializer;
import io.graphlane.actors.wire.WireFormatException;
import io.graphlane.actors.wire.WireRegistry;
import io.graphlane.actors.wire.WireTensor;
import io.graphlane.backend.cpu.collective.CollectiveDescriptor;
import io.graphlane.backend.cpu.collective.CollectiveKind;
import io.graphlane.backend.cpu.collective.CollectiveMessage;
import io.graphlane.backend.cpu.collective.ReduceOp;
import io.graphlane.cluster.pipeline.ShardHost;
import io.graphlane.cluster.pipeline.StageHost;
import io.graphlane.cluster.pipeline.StageReply;
import io.graphlane.cluster.pipeline.StageWireSerializer;
import io.graphlane.core.completion.Outcome;
import io.graphlane.core.graph.CompletionHandle;
import io.graphlane.core.graph.LaneId;
import io.graphlane.core.tensor.Shape;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.FloatBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.pekko.actor.ExtendedActorSystem;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorRefResolver;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/**
 * Hostile frames for every registered wire class of the three serializers (the wire registry's through
 * {@link KryoWireSerializer}, the stage protocol's through {@link StageWireSerializer}, the collective protocol's
 * through both paths of {@link CollectiveWireSerializer}): seeded random frames, every truncation of a valid frame and
 * length bombs (a valid prefix followed by a huge varint, at every position). Each one decodes to an object or is
 * refused with one logged {@link WireFormatException}; never another exception, an error or a hang, and no case
 * allocates more than a few times its frame's size.
 *
 * <p>It lives in the collective package, whose rank actor messages are package-private. The build runs it in a
 * fork of its own with a 256 MiB heap (the {@code wire-fuzz} surefire execution of this module, which runs this tag).
 */
@Tag("wire-fuzz")
class WireFuzzTest {
    /** Random frames per registered class (shared among its samples), with seeds fixed per sample. */
    private static final int RANDOM_CASES = 10_000;
    /** What a case may allocate besides four times its frame: the refusal with its stack trace, the log event (about 13 KiB measured). */
    private static final long ALLOCATION_SLACK = 32 * 1024;
    /** Above this a case is measured again, so the largest allocation reported is a frame's own cost. */
    private static final long TYPICAL_ALLOCATION = 8 * 1024;
    /** Varints that declare huge lengths: 2^31-1, -1 (unsigned 2^32-1), 2^28, 2^16 + 2, and a 10-byte varlong. */
    private static final byte[][] BOMBS = {
            {(byte) 0xFF, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, 0x07},
            {(byte) 0xFF, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, 0x0F},
            {(byte) 0x80, (byte) 0x80, (byte) 0x80, (byte) 0x80, 0x01},
            {(byte) 0x82, (byte) 0x80, 0x04},
            {(byte) 0xFF, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, 0x01},
    };

    private static ActorSystem<Void> system;
    private static KryoWireSerializer registry;
    private static StageWireSerializer stages;
    private static CollectiveWireSerializer collectives;
    private static final RefusalCounter REFUSALS = new RefusalCounter();
    private static final List<Logger> QUIETED = new ArrayList<>();

    @BeforeAll
    static void start() {
        system = ActorSystem.create(Behaviors.empty(), "wire-fuzz", ConfigFactory.parseString("pekko.loglevel = WARNING")
                .withFallback(ConfigFactory.load()));
        ExtendedActorSystem classic = (ExtendedActorSystem) Adapter.toClassic(system);
        registry = new KryoWireSerializer(classic);
        stages = new StageWireSerializer(classic);
        collectives = new CollectiveWireSerializer(classic);
        // Every refusal is logged once: count the lines instead of printing hundreds of thousands.
        REFUSALS.start();
        for (Class<?> source : List.of(PooledKryoSerializer.class, CollectiveWireSerializer.class)) {
            Logger logger = (Logger) LoggerFactory.getLogger(source);
            logger.setAdditive(false);
            logger.addAppender(REFUSALS);
            QUIETED.add(logger);
        }
    }

    @AfterAll
    static void stop() throws Exception {
        for (Logger logger : QUIETED) {
            logger.detachAppender(REFUSALS);
            logger.setAdditive(true);
        }
        system.terminate();
        system.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
    }

    private static <T> ActorRef<T> ref(String name) {
        return ActorRefResolver.get(system).resolveActorRef("pekko://wire-fuzz/user/" + name);
    }

    private static final CompletionHandle HANDLE = new CompletionHandle("pekko://graphlane@10.0.0.7:2552", LaneId.of("stage-1"), 41);

    private static WireTensor tensor() {
        return WireTensor.ofFloats(Shape.of(2, 3), new float[] {1.5f, -2f, 0f, 3.25f, 1e-3f, 7f});
    }

    private static Outcome.Failed failure() {
        return (Outcome.Failed) Outcome.failure(new IllegalStateException("matmul failed on stage-1"));
    }

    /** One valid message of every class the wire registry registers. */
    private static List<Object> registrySamples() {
        return List.of(LaneId.of("stage-1"), HANDLE, Outcome.success(), failure(),
                new LaneProtocol.Ended(failure(), "cpu#41"),
                new LaneProtocol.Resolved(HANDLE, new LaneProtocol.Ended(Outcome.success(), "cpu#41")),
                new LaneProtocol.Subscribe(HANDLE, 12, ref("subscriber")), new LaneProtocol.Cancel(7),
                new LaneProtocol.ForgetScope(-3), tensor(), new ActivationFrame(HANDLE, 5, 2, tensor()));
    }

    /** One valid message of every class the stage protocol registers besides the registry's. */
    private static List<Object> stageSamples() {
        return List.of(
                new StageHost.Step(5, 1, new long[] {7, 9}, new int[] {9, 0}, new int[] {1, 2}, new int[0], tensor(), new long[] {3},
                        new long[] {4}, new int[] {6}, ref("engine")),
                new StageHost.Step(6, 0, new long[] {7}, new int[] {0}, new int[] {3}, new int[] {17, 300, 70_000}, null, new long[0],
                        new long[0], new int[0], ref("engine")),
                new StageHost.Step(7, 1, new long[] {7}, new int[] {4}, new int[] {1}, new int[] {2048}, new int[0], tensor(),
                        new long[0], new long[0], new int[0], ref("engine")),
                StageHost.Step.changes(8, 1, new long[] {7, 9}, new long[] {4}, new int[] {6}, ref("engine")),
                new StageReply.StepDone(5, tensor()),
                new StageReply.StepFailed(5, 1, "pekko://graphlane@10.0.0.7:2552", failure()),
                new ShardHost.Step("tp-0", 5, new long[] {7, 9}, new int[] {9, 0}, new int[] {1, 2}, new int[] {64, 2048}),
                new ShardHost.Rewind(5, 3),
                new ShardHost.Forget(5),
                new ShardHost.Reform("tp-0", ref("lead")),
                new ShardHost.Reformed("tp-0", 1),
                new ShardHost.ReformFailed("tp-0", 1, "no device"));
    }

    /** One valid message of every class (and every member message) the collective protocol registers. */
    private static List<Object> collectiveSamples() {
        return List.of(
                new CollectiveRankActor.Hello("tp-0", 1, 4, ref("rank-1"), ref("credits-1"), "10.0.0.7", 40_123, 0x1234_5678_9ABCL),
                new CollectiveRankActor.Deliver(2, new CollectiveMessage.Chunk(3, 128, FloatBuffer.wrap(new float[] {1f, 2f, -3f, 4.5f}), null)),
                new CollectiveRankActor.Deliver(2, new CollectiveMessage.Descriptor(new CollectiveDescriptor(3, CollectiveKind.ALL_TO_ALL,
                        ReduceOp.SUM, "F32", 4, 8, new int[] {8, 8, 200, 8}))),
                new CollectiveRankActor.Deliver(2, new CollectiveMessage.Descriptor(new CollectiveDescriptor(4, CollectiveKind.ALL_TO_ALL,
                        null, "F32", 3, 8, new int[] {0, 1, 2}))),
                new CollectiveRankActor.Deliver(2, new CollectiveMessage.Descriptor(new CollectiveDescriptor(5, CollectiveKind.ALL_GATHER,
                        null, "F32", 4, 8, null))),
                new CollectiveRankActor.Deliver(2, new CollectiveMessage.Consumed(3, 128)),
                new CollectiveRankActor.Deliver(2, new CollectiveMessage.Left(1, "member 1 failed")),
                new CollectiveRankActor.Credit(2, 5),
                new CollectiveRankActor.Goodbye(2),
                new CollectiveRankActor.GoodbyeAck(2));
    }

    /** How one serializer reads a frame. */
    private interface Decoder {
        Object decode(byte[] frame);
    }

    private static Decoder bytes(PooledKryoSerializer serializer) {
        return frame -> serializer.fromBinary(frame);
    }

    /** Artery's path: a direct buffer, the frame after a few bytes of envelope. */
    private static Decoder buffers(CollectiveWireSerializer serializer) {
        return frame -> {
            ByteBuffer buf = ByteBuffer.allocateDirect(frame.length + 8);
            buf.position(8);
            buf.put(frame).flip().position(8);
            return serializer.fromBinary(buf, "");
        };
    }

    @Test
    void everyRegistryClassSurvivesHostileFrames() {
        assertCovers(registry, registrySamples(), Set.of());
        fuzz("registry", registry, bytes(registry), registrySamples());
    }

    @Test
    void everyStageProtocolClassSurvivesHostileFrames() {
        assertCovers(stages, stageSamples(), registry.registrations().keySet());
        fuzz("stage", stages, bytes(stages), stageSamples());
    }

    @Test
    void everyCollectiveProtocolClassSurvivesHostileFramesOnBothPaths() {
        assertCovers(collectives, collectiveSamples(), registry.registrations().keySet());
        fuzz("collective (byte array)", collectives, bytes(collectives), collectiveSamples());
        fuzz("collective (buffer)", collectives, buffers(collectives), collectiveSamples());
    }

    /** The samples hold every class {@code serializer} registers, apart from the ids in {@code coveredElsewhere}. */
    private static void assertCovers(PooledKryoSerializer serializer, List<Object> samples, Set<Integer> coveredElsewhere) {
        Set<Class<?>> registered = new LinkedHashSet<>();
        serializer.registrations().forEach((id, type) -> {
            if (!coveredElsewhere.contains(id)) {
                registered.add(type);
            }
        });
        Set<Class<?>> sampled = new LinkedHashSet<>();
        samples.forEach(s -> sampled.add(s.getClass()));
        assertEquals(registered, sampled, "a sample of every registered class");
        assertTrue(registered.size() >= 5, "registrations found: " + registered);
    }

    private static void fuzz(String name, PooledKryoSerializer serializer, Decoder decoder, List<Object> samples) {
        Tally tally = assertTimeoutPreemptively(Duration.ofSeconds(120), () -> {
            Tally t = new Tally();
            for (Object sample : samples) {
                long ofItsClass = samples.stream().filter(s -> s.getClass() == sample.getClass()).count();
                fuzzSample(serializer, decoder, sample, (int) (RANDOM_CASES / ofItsClass), t);
            }
            return t;
        }, () -> name + ": a frame hung the decoder");
        System.out.printf("wire fuzz %s: %d cases (%d refused, %d decoded), heap %d MiB, largest allocation %d bytes "
                        + "for a frame of %d bytes%n", name, tally.cases, tally.refused, tally.decoded,
                Runtime.getRuntime().maxMemory() >> 20, tally.largestAllocation, tally.largestAllocationFrame);
        assertEquals(tally.cases, tally.refused + tally.decoded, name + ": every frame decoded to a message or was refused");
        assertEquals(tally.refused, tally.logged, name + ": every refusal logged once");
    }

    private static void fuzzSample(PooledKryoSerializer serializer, Decoder decoder, Object sample, int randomCases, Tally tally) {
        byte[] valid = serializer.toBinary(sample);
        // A valid frame decodes to a message that frames to the same bytes.
        Object back = decoder.decode(valid);
        assertEquals(sample.getClass(), back.getClass());
        assertArrayEquals(valid, serializer.toBinary(back), "a " + sample.getClass().getSimpleName() + " round trip");

        for (int cut = 0; cut < valid.length; cut++) {
            tally.check(decoder, Arrays.copyOf(valid, cut), sample, "truncated to " + cut);
        }
        for (int at = 1; at <= valid.length; at++) {
            for (byte[] bomb : BOMBS) {
                byte[] frame = new byte[at + bomb.length + (valid.length - at)];
                System.arraycopy(valid, 0, frame, 0, at);
                System.arraycopy(bomb, 0, frame, at, bomb.length);
                System.arraycopy(valid, at, frame, at + bomb.length, valid.length - at);
                tally.check(decoder, frame, sample, "a length bomb at byte " + at);
            }
        }
        Random random = new Random(Arrays.hashCode(valid));
        int idBytes = valid.length > 1 && (valid[0] & 0x80) != 0 ? 2 : 1;
        for (int i = 0; i < randomCases; i++) {
            byte[] frame;
            switch (i % 3) {
                case 0 -> {
                    // The class id, then random bytes.
                    frame = new byte[idBytes + random.nextInt(2 * valid.length + 16)];
                    random.nextBytes(frame);
                    System.arraycopy(valid, 0, frame, 0, idBytes);
                }
                case 1 -> {
                    // The valid frame with one to four bytes changed.
                    frame = valid.clone();
                    int from = frame.length > idBytes ? idBytes : 0;
                    for (int n = 1 + random.nextInt(4); n > 0; n--) {
                        frame[from + random.nextInt(frame.length - from)] = (byte) random.nextInt();
                    }
                }
                default -> {
                    frame = new byte[random.nextInt(64)];
                    random.nextBytes(frame);
                }
            }
            tally.check(decoder, frame, sample, "random case " + i);
        }
    }

    /** Counts the cases and their outcomes; fails on anything but a message or a WireFormatException. */
    private static final class Tally {
        private static final com.sun.management.ThreadMXBean THREADS =
                (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        long cases;
        long refused;
        long decoded;
        long logged;
        long largestAllocation;
        int largestAllocationFrame;

        void check(Decoder decoder, byte[] frame, Object sample, String what) {
            cases++;
            long loggedBefore = REFUSALS.count.get();
            long allocated = decodeOnce(decoder, frame, sample, what, true);
            logged += REFUSALS.count.get() - loggedBefore;
            long bound = 4L * frame.length + ALLOCATION_SLACK;
            if (allocated > TYPICAL_ALLOCATION) {
                // Decoding is deterministic: a repeat shows what the frame itself costs, without a first use's
                // one-time work (a class initialised, a string concatenation bootstrapped).
                allocated = Math.min(allocated, decodeOnce(decoder, frame, sample, what, false));
                if (allocated > bound) {
                    fail("decoding allocated " + allocated + " bytes: " + describe(sample, what, frame));
                }
            }
            if (allocated > largestAllocation) {
                largestAllocation = allocated;
                largestAllocationFrame = frame.length;
            }
        }

        /** Decodes {@code frame} (counting the outcome if {@code count}); the bytes this thread allocated meanwhile. */
        private long decodeOnce(Decoder decoder, byte[] frame, Object sample, String what, boolean count) {
            long before = THREADS.getCurrentThreadAllocatedBytes();
            Throwable thrown = null;
            boolean decodedOne = false;
            try {
                decodedOne = decoder.decode(frame) != null;
            } catch (WireFormatException e) {
                refused += count ? 1 : 0;
            } catch (Throwable e) {
                thrown = e;
            }
            long allocated = THREADS.getCurrentThreadAllocatedBytes() - before;
            if (thrown != null) {
                throw new AssertionError("expected a message or a WireFormatException, got " + thrown + ": "
                        + describe(sample, what, frame), thrown);
            }
            decoded += count && decodedOne ? 1 : 0;
            return allocated;
        }

        private static String describe(Object sample, String what, byte[] frame) {
            return sample.getClass().getSimpleName() + " " + what + " (" + frame.length + " bytes: "
                    + HexFormat.of().formatHex(frame, 0, Math.min(frame.length, 96)) + ")";
        }
    }

    /** Counts the refusals the serializers log. */
    private static final class RefusalCounter extends AppenderBase<ILoggingEvent> {
        final AtomicLong count = new AtomicLong();

        @Override
        protected void append(ILoggingEvent event) {
            count.incrementAndGet();
        }
    }
}
