package io.graphlane.actors.wire;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.graphlane.actors.lane.LaneProtocol;
import io.graphlane.core.backend.SubmissionBackend;
import io.graphlane.core.completion.Outcome;
import io.graphlane.core.completion.PoisonedPreconditionException;
import io.graphlane.core.completion.SettableCompletion;
import io.graphlane.core.graph.CompletionHandle;
import io.graphlane.core.graph.LaneId;
import io.graphlane.core.tensor.Shape;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Set;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.serialization.Serialization;
import org.apache.pekko.serialization.SerializationExtension;
import org.apache.pekko.serialization.Serializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/** The Kryo wire format: round trips through Pekko's Serialization extension, and refusals that leave the node up. */
class KryoWireSerializerTest {
    private static final ActorTestKit KIT = ActorTestKit.create(ConfigFactory.parseString("""
            pekko.actor.serialize-messages = on
            pekko.actor.no-serialization-verification-needed-class-prefix = ["org.apache.pekko."]
            """).withFallback(ConfigFactory.load()));
    private static final Serialization SERIALIZATION = SerializationExtension.get(Adapter.toClassic(KIT.system()));
    private static final CompletionHandle HANDLE = new CompletionHandle("pekko://graphlane@127.0.0.1:2552", LaneId.of("stage-1"), 41);

    @AfterAll
    static void stop() {
        KIT.shutdownTestKit();
    }

    private static Object roundTrip(Object message) {
        Serializer serializer = SERIALIZATION.findSerializerFor(message);
        assertInstanceOf(KryoWireSerializer.class, serializer, "serializer of " + message.getClass());
        byte[] bytes = serializer.toBinary(message);
        Object back = SERIALIZATION.deserialize(bytes, serializer.identifier(), "").get();
        assertNotSame(message, back);
        return back;
    }

    @Test
    void laneMessagesRoundTripThroughTheSerializationExtension() {
        assertEquals(new LaneProtocol.Cancel(7), roundTrip(new LaneProtocol.Cancel(7)));
        assertEquals(new LaneProtocol.ForgetScope(-3), roundTrip(new LaneProtocol.ForgetScope(-3)));
        LaneProtocol.Resolved ok = new LaneProtocol.Resolved(HANDLE, new LaneProtocol.Ended(Outcome.success(), "cpu#41"));
        assertEquals(ok, roundTrip(ok));
    }

    @Test
    void aFailedOutcomeCrossesWithItsCauseClassAndMessage() {
        PoisonedPreconditionException poisoned = PoisonedPreconditionException.of("stage-2#9", HANDLE.toString(),
                new IllegalStateException("matmul failed on stage-1"));
        LaneProtocol.Resolved failed = new LaneProtocol.Resolved(HANDLE, new LaneProtocol.Ended(Outcome.failure(poisoned), "x"));
        LaneProtocol.Resolved back = (LaneProtocol.Resolved) roundTrip(failed);
        LaneProtocol.Ended ended = (LaneProtocol.Ended) back.resolution();
        RemoteFailureException cause = (RemoteFailureException) ((Outcome.Failed) ended.outcome()).cause();
        assertEquals(PoisonedPreconditionException.class.getName(), cause.originalClass());
        assertTrue(cause.getMessage().contains("matmul failed on stage-1"), cause.getMessage());
        // Crossing again keeps the original class, not RemoteFailureException.
        LaneProtocol.Resolved twice = (LaneProtocol.Resolved) roundTrip(back);
        assertEquals(PoisonedPreconditionException.class.getName(),
                ((RemoteFailureException) ((Outcome.Failed) ((LaneProtocol.Ended) twice.resolution()).outcome()).cause())
                        .originalClass());
    }

    @Test
    void aSubscribersActorRefTravelsThroughTheResolverAndStillReachesIt() {
        TestProbe<LaneProtocol.Resolved> subscriber = KIT.createTestProbe();
        LaneProtocol.Subscribe back = (LaneProtocol.Subscribe) roundTrip(new LaneProtocol.Subscribe(HANDLE, 12, subscriber.getRef()));
        assertEquals(HANDLE, back.handle());
        assertEquals(12, back.scope());
        assertEquals(subscriber.getRef(), back.subscriber());
        LaneProtocol.Resolved resolved = new LaneProtocol.Resolved(HANDLE, new LaneProtocol.Ended(Outcome.success(), "l"));
        back.subscriber().tell(resolved);
        assertEquals(resolved, subscriber.receiveMessage());
    }

    @Test
    void messagesToActorsAreSerializedWhenSerializeMessagesIsOn() {
        TestProbe<LaneProtocol.Resolved> probe = KIT.createTestProbe();
        LaneProtocol.Resolved failed = new LaneProtocol.Resolved(HANDLE,
                new LaneProtocol.Ended(Outcome.failure(new IllegalStateException("lost")), "l"));
        probe.getRef().tell(failed);
        LaneProtocol.Resolved received = probe.receiveMessage();
        // The probe got the deserialized copy: its cause is the wire form of the failure.
        Throwable cause = ((Outcome.Failed) ((LaneProtocol.Ended) received.resolution()).outcome()).cause();
        assertInstanceOf(RemoteFailureException.class, cause);
        assertEquals("java.lang.IllegalStateException: lost", cause.getMessage());
    }

    @Test
    void activationsTravelAsRawLittleEndianBytes() {
        float[] values = {1.5f, -0.0f, Float.NaN, Float.MIN_VALUE, 3.4e38f, 42f};
        ActivationFrame frame = new ActivationFrame(HANDLE, 5, 3, WireTensor.ofFloats(Shape.of(2, 3), values));
        byte[] bytes = SERIALIZATION.findSerializerFor(frame).toBinary(frame);
        ByteBuffer expected = ByteBuffer.allocate(values.length * 4).order(ByteOrder.LITTLE_ENDIAN);
        expected.asFloatBuffer().put(values);
        byte[] tail = Arrays.copyOfRange(bytes, bytes.length - values.length * 4, bytes.length);
        assertArrayEquals(expected.array(), tail, "the frame ends with the values' little-endian bytes");

        ActivationFrame back = (ActivationFrame) roundTrip(frame);
        assertEquals(frame, back);
        float[] got = back.activation().toFloats();
        for (int i = 0; i < values.length; i++) {
            assertEquals(Float.floatToRawIntBits(values[i]), Float.floatToRawIntBits(got[i]), "value " + i);
        }
        assertEquals(Shape.of(2, 3), back.activation().shape());
    }

    @Test
    void everyRegistryMessageIsBoundToKryoAndIdsNeverRepeat() {
        Set<Integer> ids = new HashSet<>();
        Set<Class<?>> types = new HashSet<>();
        for (WireRegistry.Entry e : WireRegistry.ENTRIES) {
            assertTrue(ids.add(e.id()), "id " + e.id() + " repeats");
            assertTrue(types.add(e.type()), e.type() + " repeats");
            assertTrue(e.id() >= 100, "ids below 100 are Kryo's");
        }
        Config bindings = KIT.system().settings().config().getConfig("pekko.actor.serialization-bindings");
        for (Class<?> message : WireRegistry.MESSAGES) {
            assertTrue(types.contains(message), message + " is bound but not registered");
            assertEquals("graphlane-kryo", bindings.getString("\"" + message.getName() + "\""), message.getName());
        }
    }

    @Test
    void unregisteredTruncatedAndUnknownFramesAreRefusedAndTheSerializerKeepsWorking() {
        Serializer kryo = SERIALIZATION.serializerByIdentity().apply(KryoWireSerializer.IDENTIFIER);

        WireFormatException unregistered = assertThrows(WireFormatException.class, () -> kryo.toBinary(new Unregistered(1)));
        assertTrue(unregistered.getMessage().contains(Unregistered.class.getName()), unregistered.getMessage());

        byte[] good = kryo.toBinary(new LaneProtocol.Resolved(HANDLE, new LaneProtocol.Ended(Outcome.success(), "label")));
        for (int cut = 1; cut < good.length; cut++) {
            byte[] truncated = Arrays.copyOf(good, good.length - cut);
            WireFormatException e = assertThrows(WireFormatException.class, () -> kryo.fromBinary(truncated),
                    "a frame cut by " + cut + " bytes");
            assertTrue(e.getMessage().contains("refused a frame of " + truncated.length + " bytes"), e.getMessage());
        }

        byte[] unknownId = {(byte) 0xE9, 0x07}; // varint 999 + 2: no class has this id
        WireFormatException unknown = assertThrows(WireFormatException.class, () -> kryo.fromBinary(unknownId));
        assertTrue(unknown.getMessage().contains("999"), unknown.getMessage());

        byte[] trailing = Arrays.copyOf(good, good.length + 3);
        assertTrue(assertThrows(WireFormatException.class, () -> kryo.fromBinary(trailing)).getMessage()
                .contains("3 trailing bytes"));

        LaneProtocol.Resolved onDevice = new LaneProtocol.Resolved(HANDLE,
                new LaneProtocol.OnDevice((SubmissionBackend<?, ?, ?>) null, new SettableCompletion("cpu#1")));
        assertTrue(assertThrows(WireFormatException.class, () -> kryo.toBinary(onDevice)).getMessage().contains("OnDevice"));

        // The same serializer (and its pooled Kryo instances) still frames and reads messages.
        assertEquals(new LaneProtocol.Cancel(3), kryo.fromBinary(kryo.toBinary(new LaneProtocol.Cancel(3))));
    }

    @Test
    void aTensorFrameWhoseByteCountDisagreesWithItsShapeIsRefused() {
        assertThrows(WireFormatException.class, () -> WireTensor.of(io.graphlane.core.tensor.DType.F32, Shape.of(3),
                ByteBuffer.allocate(8)));
        assertThrows(WireFormatException.class, () -> WireTensor.ofFloats(Shape.of(2, 2), new float[3]));
    }

    /** A class that is not in the registry. */
    record Unregistered(int value) {
    }
}
