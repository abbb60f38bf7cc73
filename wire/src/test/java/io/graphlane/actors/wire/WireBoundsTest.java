package io.graphlane.actors.wire;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.esotericsoftware.kryo.io.Output;
import io.graphlane.actors.lane.LaneProtocol;
import io.graphlane.core.completion.Outcome;
import io.graphlane.core.graph.LaneId;
import java.nio.charset.StandardCharsets;
import java.util.function.Consumer;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.serialization.SerializationExtension;
import org.apache.pekko.serialization.Serializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * Frames that declare more than they hold are refused before anything is allocated, with the field, the declared size
 * and what the frame has left; a frame cannot nest a message in itself or name a class by name; long text is cut on
 * write while other long strings are refused.
 */
class WireBoundsTest {
    private static final ActorTestKit KIT = ActorTestKit.create();
    private static final Serializer KRYO = SerializationExtension.get(Adapter.toClassic(KIT.system()))
            .serializerByIdentity().apply(KryoWireSerializer.IDENTIFIER);
    private static final int LANE_ID = 100;
    private static final int ENDED_ID = 104;
    private static final int TENSOR_ID = 109;

    @AfterAll
    static void stop() {
        KIT.shutdownTestKit();
    }

    /** A frame of class {@code id} whose body {@code body} writes. */
    private static byte[] frame(int id, Consumer<Output> body) {
        Output out = new Output(64, -1);
        out.writeVarInt(id + 2, true); // Kryo's class id encoding: 0 is null, 1 a class by name
        body.accept(out);
        return out.toBytes();
    }

    private static String refusal(byte[] frame) {
        return assertThrows(WireFormatException.class, () -> KRYO.fromBinary(frame)).getMessage();
    }

    @Test
    void aTensorDeclaringMoreBytesThanItsFrameHoldsIsRefusedNamingTheField() {
        byte[] frame = frame(TENSOR_ID, out -> {
            WireFields.writeString(out, "U8", "dtype");
            out.writeVarInt(1, true);
            out.writeVarLong(Integer.MAX_VALUE, true);
            out.writeVarInt(Integer.MAX_VALUE, true);
            out.writeBytes(new byte[12]);
        });
        assertEquals("refused a frame of " + frame.length + " bytes: WireTensor.bytes: declares 2147483647 bytes but the frame has 12 left",
                refusal(frame));
    }

    @Test
    void aTensorOfTooHighARankOrOverflowingDimsIsRefused() {
        String rank = refusal(frame(TENSOR_ID, out -> {
            WireFields.writeString(out, "F32", "dtype");
            out.writeVarInt(17, true);
            out.writeBytes(new byte[40]);
        }));
        assertTrue(rank.endsWith("WireTensor.dims: declares 17 entries; expected at most 16"), rank);
        String overflow = refusal(frame(TENSOR_ID, out -> {
            WireFields.writeString(out, "F32", "dtype");
            out.writeVarInt(2, true);
            out.writeVarLong(1L << 62, true);
            out.writeVarLong(1L << 62, true);
            out.writeVarInt(0, true);
        }));
        assertTrue(overflow.contains("WireTensor.dims: shape [4611686018427387904, 4611686018427387904] has more elements than fit"), overflow);
    }

    @Test
    void aStringLongerThanItsCapOrItsFrameIsRefusedBeforeItIsRead() {
        String bomb = refusal(frame(LANE_ID, out -> out.writeVarInt(Integer.MAX_VALUE, true)));
        assertTrue(bomb.endsWith("LaneId.name: declares a string of 2147483646 bytes; expected at most 65536"), bomb);
        String shortFrame = refusal(frame(LANE_ID, out -> {
            out.writeVarInt(1001, true);
            out.writeBytes("abc".getBytes(StandardCharsets.UTF_8));
        }));
        assertTrue(shortFrame.endsWith("LaneId.name: declares a string of 1000 bytes but the frame has 3 left"), shortFrame);
        String negative = refusal(frame(LANE_ID, out -> out.writeVarInt(-1, true)));
        assertTrue(negative.contains("LaneId.name: declares a string of"), negative);
    }

    @Test
    void aMessageNestedInItselfIsRefusedBeforeItIsRead() {
        // An Ended whose outcome is an Ended whose outcome is ...: refused at the first level, not recursed into.
        byte[] nested = frame(ENDED_ID, out -> {
            for (int i = 0; i < 10_000; i++) {
                out.writeVarInt(ENDED_ID + 2, true);
            }
        });
        assertTrue(refusal(nested).endsWith("Ended.outcome: expected a value of type Outcome, found Ended (class id 104)"));
    }

    @Test
    void aClassByNameOrOneOfKryosOwnIsRefused() {
        // Class id 1 is a class by name, whose name would be an unbounded string.
        String byName = refusal(new byte[] {1, 0, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, 0x07});
        assertTrue(byName.contains("graphlane frames name classes by id only"), byName);
        // Kryo registers String under id 1 (written as 3): not a graphlane wire class.
        String kryos = refusal(new byte[] {3, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, 0x07});
        assertTrue(kryos.contains("is not a graphlane wire class; expected an id from 100"), kryos);
    }

    @Test
    void longFailureTextIsCutToTheCapOnACharacterBoundary() {
        String text = "é".repeat(40_000); // 80,000 UTF-8 bytes
        LaneProtocol.Ended ended = new LaneProtocol.Ended(Outcome.failure(new IllegalStateException(text)), "cpu#1");
        byte[] frame = KRYO.toBinary(ended);
        LaneProtocol.Ended back = (LaneProtocol.Ended) KRYO.fromBinary(frame);
        String message = ((RemoteFailureException) ((Outcome.Failed) back.outcome()).cause()).originalMessage();
        assertTrue(message.endsWith(" ... (cut)"), message.substring(message.length() - 20));
        int bytes = message.getBytes(StandardCharsets.UTF_8).length;
        assertTrue(bytes <= WireFields.MAX_STRING_BYTES && bytes > WireFields.MAX_STRING_BYTES - 16, "cut to " + bytes + " bytes");
        assertTrue(message.startsWith("éé") && !message.contains("\uFFFD"), "cut between characters");
    }

    @Test
    void aLongNameIsRefusedOnWriteNamingTheField() {
        LaneId lane = LaneId.of("l".repeat(WireFields.MAX_STRING_BYTES + 1));
        String refused = assertThrows(WireFormatException.class, () -> KRYO.toBinary(lane)).getMessage();
        assertTrue(refused.contains("LaneId.name: a string of 65537 UTF-8 bytes cannot cross nodes; at most 65536"), refused);
    }
}
