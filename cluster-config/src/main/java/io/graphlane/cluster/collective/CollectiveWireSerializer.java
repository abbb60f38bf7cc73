package io.graphlane.cluster.collective;

import com.esotericsoftware.kryo.Kryo;
import com.esotericsoftware.kryo.KryoException;
import com.esotericsoftware.kryo.Serializer;
import com.esotericsoftware.kryo.io.ByteBufferInput;
import com.esotericsoftware.kryo.io.ByteBufferOutput;
import com.esotericsoftware.kryo.io.Input;
import com.esotericsoftware.kryo.io.Output;
import io.graphlane.actors.wire.PooledKryoSerializer;
import io.graphlane.actors.wire.WireFields;
import io.graphlane.actors.wire.WireFormatException;
import io.graphlane.actors.wire.WireRegistry;
import io.graphlane.backend.cpu.collective.CollectiveDescriptor;
import io.graphlane.backend.cpu.collective.CollectiveKind;
import io.graphlane.backend.cpu.collective.CollectiveMessage;
import io.graphlane.backend.cpu.collective.ReduceOp;
import java.util.List;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import org.apache.pekko.actor.ExtendedActorSystem;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorRefResolver;
import org.apache.pekko.serialization.ByteBufferSerializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The wire format of the rank actors of collective groups across nodes ({@link CollectiveRankActor}'s wire messages):
 * Kryo 5 with registration required, the fixed ids of {@link WireRegistry} plus this protocol's own from 210, actor
 * refs through {@link ActorRefResolver}. A payload chunk is its header followed by its floats, little-endian, written
 * and read in bulk.
 *
 * <p>Artery frames messages through the {@link ByteBufferSerializer} side: Kryo writes straight into Artery's pooled
 * envelope buffer and the floats are one bulk copy each way, with no intermediate byte array. The byte-array side
 * (from {@link PooledKryoSerializer}) writes the same frames, so either side reads either. A frame that is truncated,
 * of an unknown class, declares a field larger than the frame or its cap ({@link WireFields}) or has trailing bytes is
 * refused with a logged {@link WireFormatException}; the node stays up.
 */
public final class CollectiveWireSerializer extends PooledKryoSerializer implements ByteBufferSerializer {
    private static final Logger LOG = LoggerFactory.getLogger(CollectiveWireSerializer.class);

    /** This serializer's Pekko identifier; the same on every node. */
    public static final int IDENTIFIER = 474_210;

    /** The protocol's classes with their fixed ids; never renumbered or reused. */
    static final int HELLO_ID = 210;
    static final int DELIVER_ID = 211;
    static final int CREDIT_ID = 212;
    static final int GOODBYE_ID = 213;
    static final int GOODBYE_ACK_ID = 214;

    private static final byte DESCRIPTOR = 0;
    private static final byte CHUNK = 1;
    private static final byte CONSUMED = 2;
    private static final byte LEFT = 3;
    private static final int MAX_COUNTS = 1 << 20;
    /** Set while this thread decodes through {@link #fromBinaryViewing}: a chunk's floats are then a view of the frame. */
    private static final ThreadLocal<boolean[]> VIEWING = ThreadLocal.withInitial(() -> new boolean[1]);
    /** Set while this thread frames through {@link #toBinaryHeader}: a chunk's floats are then left out. */
    private static final ThreadLocal<boolean[]> HEADER_ONLY = ThreadLocal.withInitial(() -> new boolean[1]);

    /** The serializer of {@code system}; Pekko constructs it from pekko.actor.serializers. */
    public CollectiveWireSerializer(ExtendedActorSystem system) {
        super(system, ENTRIES);
    }

    /** The collective protocol's classes: its Kryo knows these and the wire registry's, and nothing else. */
    static final List<WireRegistry.Entry> ENTRIES = List.of(
            new WireRegistry.Entry(HELLO_ID, CollectiveRankActor.Hello.class, HelloSerializer::new),
            new WireRegistry.Entry(DELIVER_ID, CollectiveRankActor.Deliver.class, r -> new DeliverSerializer()),
            new WireRegistry.Entry(CREDIT_ID, CollectiveRankActor.Credit.class, r -> new CreditSerializer()),
            new WireRegistry.Entry(GOODBYE_ID, CollectiveRankActor.Goodbye.class, r -> new GoodbyeSerializer()),
            new WireRegistry.Entry(GOODBYE_ACK_ID, CollectiveRankActor.GoodbyeAck.class, r -> new GoodbyeAckSerializer()));

    @Override
    public int identifier() {
        return IDENTIFIER;
    }

    /** Artery's path: frames {@code message} straight into {@code buf} from its position. */
    @Override
    public void toBinary(Object message, ByteBuffer buf) {
        withKryo(kryo -> {
            try {
                ByteBufferOutput out = new ByteBufferOutput(buf, buf.limit());
                kryo.writeClassAndObject(out, message);
                return null;
            } catch (IllegalArgumentException | KryoException | WireFormatException | java.nio.BufferOverflowException e) {
                WireFormatException refused = e instanceof WireFormatException w ? w : new WireFormatException("cannot frame a "
                        + message.getClass().getName() + " into a buffer of " + buf.remaining() + " bytes: " + firstLine(e), e);
                LOG.warn("refused outgoing collective message: {}", refused.getMessage());
                throw refused;
            }
        });
    }

    /** Artery's path: reads one frame from {@code buf}'s position to its limit; refuses what {@link #decode} refuses. */
    @Override
    public Object fromBinary(ByteBuffer buf, String manifest) {
        return decode(new ByteBufferInput(buf), buf.remaining());
    }

    /**
     * The socket plane's path: reads one frame like {@link #fromBinary}, refusing the same, except that a chunk's floats
     * are not copied: its values are a little-endian view of {@code buf} itself, valid while the caller leaves
     * {@code buf} unchanged (the plane reads its next frame into another buffer until the member has consumed the chunk).
     */
    Object fromBinaryViewing(ByteBuffer buf) {
        boolean[] viewing = VIEWING.get();
        viewing[0] = true;
        try {
            return fromBinary(buf, "");
        } finally {
            viewing[0] = false;
        }
    }

    /**
     * The socket plane's sending path: frames {@code deliver}, which holds a chunk, into {@code buf} from its position
     * exactly as {@link #toBinary(Object, ByteBuffer)} would, but stops before the chunk's floats, which the plane writes
     * right behind these bytes straight from their own memory.
     */
    void toBinaryHeader(CollectiveRankActor.Deliver deliver, ByteBuffer buf) {
        boolean[] headerOnly = HEADER_ONLY.get();
        headerOnly[0] = true;
        try {
            toBinary(deliver, buf);
        } finally {
            headerOnly[0] = false;
        }
    }

    // ------------------------------------------------------------------ floats in bulk

    /** Writes the floats of {@code values} (from its position to its limit), little-endian, in one bulk copy where it can. */
    static void writeFloats(Output out, FloatBuffer values) {
        int n = values.remaining();
        if (HEADER_ONLY.get()[0]) {
            return;
        }
        if (out instanceof ByteBufferOutput bbo) {
            ByteBuffer target = bbo.getByteBuffer();
            int at = bbo.position();
            long bytes = (long) n * Float.BYTES;
            if (bytes > target.limit() - at) {
                throw new WireFormatException("a collective chunk of " + n + " floats (" + bytes + " bytes) does not fit the "
                        + (target.limit() - at) + " bytes left in the frame; lower the group's chunk size or raise Artery's"
                        + " maximum-large-frame-size");
            }
            ByteBuffer view = target.duplicate().order(ByteOrder.LITTLE_ENDIAN);
            view.position(at);
            view.asFloatBuffer().put(values.duplicate());
            bbo.setPosition(at + (int) bytes);
        } else if (values.hasArray()) {
            out.writeFloats(values.array(), values.arrayOffset() + values.position(), n);
        } else {
            float[] copy = new float[n];
            values.get(values.position(), copy);
            out.writeFloats(copy, 0, n);
        }
    }

    /**
     * The {@code n} little-endian floats (that {@link WireFields#length} found in the frame) as a buffer of their own: a view
     * of the frame's buffer under {@link #fromBinaryViewing}, else a copy made in one bulk copy where it can.
     */
    static FloatBuffer chunkFloats(Input in, int n) {
        if (in instanceof ByteBufferInput bbi && VIEWING.get()[0]) {
            int bytes = n * Float.BYTES;
            int at = bbi.position();
            FloatBuffer view = bbi.getByteBuffer().slice(at, bytes).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer();
            bbi.setPosition(at + bytes);
            return view;
        }
        return FloatBuffer.wrap(readFloats(in, n));
    }

    /** Reads {@code n} little-endian floats (that {@link WireFields#length} found in the frame), in one bulk copy where it can. */
    static float[] readFloats(Input in, int n) {
        if (in instanceof ByteBufferInput bbi) {
            int bytes = n * Float.BYTES;
            int at = bbi.position();
            float[] values = new float[n];
            ByteBuffer view = bbi.getByteBuffer().duplicate().order(ByteOrder.LITTLE_ENDIAN);
            view.position(at);
            view.asFloatBuffer().get(values);
            bbi.setPosition(at + bytes);
            return values;
        }
        return in.readFloats(n);
    }

    // ------------------------------------------------------------------ the messages

    private static final class HelloSerializer extends Serializer<CollectiveRankActor.Hello> {
        private final ActorRefResolver resolver;

        HelloSerializer(ActorRefResolver resolver) {
            this.resolver = resolver;
        }

        @Override
        public void write(Kryo kryo, Output out, CollectiveRankActor.Hello h) {
            WireFields.writeString(out, h.group(), "Hello.group");
            out.writeVarInt(h.rank(), true);
            out.writeVarInt(h.size(), true);
            WireFields.writeString(out, resolver.toSerializationFormat(h.rankActor()), "Hello.rankActor");
            WireFields.writeString(out, resolver.toSerializationFormat(h.credits()), "Hello.credits");
            // Added after the first version, at the end: a frame without them reads as the Artery payload plane.
            WireFields.writeString(out, h.payloadHost(), "Hello.payloadHost");
            out.writeVarInt(h.payloadPort(), true);
            out.writeLong(h.payloadNonce());
        }

        @Override
        public CollectiveRankActor.Hello read(Kryo kryo, Input in, Class<? extends CollectiveRankActor.Hello> type) {
            String group = WireFields.string(in, "Hello.group");
            int rank = in.readVarInt(true);
            int size = in.readVarInt(true);
            ActorRef<CollectiveRankActor.Command> actor = resolver.resolveActorRef(WireFields.requiredString(in, "Hello.rankActor"));
            ActorRef<CollectiveRankActor.Command> credits = resolver.resolveActorRef(WireFields.requiredString(in, "Hello.credits"));
            if (in.end()) {
                return new CollectiveRankActor.Hello(group, rank, size, actor, credits, "", 0, 0L);
            }
            String payloadHost = WireFields.string(in, "Hello.payloadHost");
            int payloadPort = in.readVarInt(true);
            if (payloadPort < 0 || payloadPort > 65_535) {
                throw new WireFormatException("a collective hello announces payload port " + payloadPort + "; expected 0..65535");
            }
            long nonce = in.readLong();
            return new CollectiveRankActor.Hello(group, rank, size, actor, credits, payloadHost == null ? "" : payloadHost, payloadPort, nonce);
        }
    }

    private static final class DeliverSerializer extends Serializer<CollectiveRankActor.Deliver> {
        @Override
        public void write(Kryo kryo, Output out, CollectiveRankActor.Deliver d) {
            out.writeVarInt(d.from(), true);
            CollectiveMessage m = d.message();
            if (m instanceof CollectiveMessage.Chunk c) {
                if (c.loan() != null) {
                    throw new WireFormatException("a collective chunk lent by reference cannot cross nodes");
                }
                out.writeByte(CHUNK);
                out.writeVarLong(c.sequence(), true);
                out.writeVarLong(c.offset(), true);
                out.writeVarInt(c.values().remaining(), true);
                writeFloats(out, c.values());
            } else if (m instanceof CollectiveMessage.Descriptor desc) {
                CollectiveDescriptor x = desc.descriptor();
                out.writeByte(DESCRIPTOR);
                out.writeVarLong(x.sequence(), true);
                WireFields.writeString(out, x.kind().name(), "Deliver.descriptor.kind");
                WireFields.writeString(out, x.reduceOp() == null ? null : x.reduceOp().name(), "Deliver.descriptor.reduceOp");
                WireFields.writeString(out, x.dtype(), "Deliver.descriptor.dtype");
                out.writeVarInt(x.rows(), true);
                out.writeVarInt(x.cols(), true);
                int[] counts = x.sendCounts();
                out.writeVarInt(counts == null ? 0 : counts.length + 1, true);
                if (counts != null) {
                    out.writeInts(counts, 0, counts.length, true);
                }
            } else if (m instanceof CollectiveMessage.Consumed c) {
                out.writeByte(CONSUMED);
                out.writeVarLong(c.sequence(), true);
                out.writeVarLong(c.offset(), true);
            } else if (m instanceof CollectiveMessage.Left l) {
                out.writeByte(LEFT);
                out.writeVarInt(l.member(), true);
                WireFields.writeText(out, l.reason(), "Deliver.left.reason");
            } else {
                throw new WireFormatException("unknown collective message " + m);
            }
        }

        @Override
        public CollectiveRankActor.Deliver read(Kryo kryo, Input in, Class<? extends CollectiveRankActor.Deliver> type) {
            int from = in.readVarInt(true);
            byte tag = in.readByte();
            CollectiveMessage m = switch (tag) {
                case CHUNK -> {
                    long sequence = in.readVarLong(true);
                    long offset = in.readVarLong(true);
                    int n = WireFields.length(in, "Deliver.chunk.floats", Float.BYTES);
                    yield new CollectiveMessage.Chunk(sequence, offset, chunkFloats(in, n), null);
                }
                case DESCRIPTOR -> {
                    long sequence = in.readVarLong(true);
                    CollectiveKind kind = enumOf(CollectiveKind.class, WireFields.string(in, "Deliver.descriptor.kind"), "operation");
                    String op = WireFields.string(in, "Deliver.descriptor.reduceOp");
                    ReduceOp reduce = op == null ? null : enumOf(ReduceOp.class, op, "reduction");
                    String dtype = WireFields.string(in, "Deliver.descriptor.dtype");
                    int rows = in.readVarInt(true);
                    int cols = in.readVarInt(true);
                    int[] counts = WireFields.nullableInts(in, "Deliver.descriptor.sendCounts", MAX_COUNTS);
                    yield new CollectiveMessage.Descriptor(new CollectiveDescriptor(sequence, kind, reduce, dtype == null ? "" : dtype,
                            rows, cols, counts));
                }
                case CONSUMED -> new CollectiveMessage.Consumed(in.readVarLong(true), in.readVarLong(true));
                case LEFT -> new CollectiveMessage.Left(in.readVarInt(true), String.valueOf(WireFields.string(in, "Deliver.left.reason")));
                default -> throw new WireFormatException("unknown collective message tag " + tag + "; expected 0..3");
            };
            return new CollectiveRankActor.Deliver(from, m);
        }

        private static <E extends Enum<E>> E enumOf(Class<E> type, String name, String what) {
            try {
                return Enum.valueOf(type, String.valueOf(name));
            } catch (IllegalArgumentException e) {
                throw new WireFormatException("a collective descriptor names the unknown " + what + " '" + name + "'");
            }
        }
    }

    private static final class CreditSerializer extends Serializer<CollectiveRankActor.Credit> {
        @Override
        public void write(Kryo kryo, Output out, CollectiveRankActor.Credit c) {
            out.writeVarInt(c.from(), true);
            out.writeVarInt(c.chunks(), true);
        }

        @Override
        public CollectiveRankActor.Credit read(Kryo kryo, Input in, Class<? extends CollectiveRankActor.Credit> type) {
            return new CollectiveRankActor.Credit(in.readVarInt(true), in.readVarInt(true));
        }
    }

    private static final class GoodbyeSerializer extends Serializer<CollectiveRankActor.Goodbye> {
        @Override
        public void write(Kryo kryo, Output out, CollectiveRankActor.Goodbye g) {
            out.writeVarInt(g.from(), true);
        }

        @Override
        public CollectiveRankActor.Goodbye read(Kryo kryo, Input in, Class<? extends CollectiveRankActor.Goodbye> type) {
            return new CollectiveRankActor.Goodbye(in.readVarInt(true));
        }
    }

    private static final class GoodbyeAckSerializer extends Serializer<CollectiveRankActor.GoodbyeAck> {
        @Override
        public void write(Kryo kryo, Output out, CollectiveRankActor.GoodbyeAck g) {
            out.writeVarInt(g.from(), true);
        }

        @Override
        public CollectiveRankActor.GoodbyeAck read(Kryo kryo, Input in, Class<? extends CollectiveRankActor.GoodbyeAck> type) {
            return new CollectiveRankActor.GoodbyeAck(in.readVarInt(true));
        }
    }
}
