package io.graphlane.actors.wire;

import com.esotericsoftware.kryo.Kryo;
import com.esotericsoftware.kryo.Registration;
import com.esotericsoftware.kryo.Serializer;
import com.esotericsoftware.kryo.io.Input;
import com.esotericsoftware.kryo.io.Output;
import com.esotericsoftware.kryo.util.DefaultClassResolver;
import io.graphlane.actors.lane.LaneProtocol;
import io.graphlane.core.completion.Outcome;
import io.graphlane.core.graph.CompletionHandle;
import io.graphlane.core.graph.LaneId;
import io.graphlane.core.tensor.DType;
import io.graphlane.core.tensor.Shape;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.function.Function;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorRefResolver;

/**
 * Every class that crosses nodes, with its fixed Kryo id and serializer. The ids are part of the wire format:
 * every node must register the same classes under the same ids, so an entry is never renumbered or reused —
 * new classes take new ids. Messages listed here are bound to {@link KryoWireSerializer} in the wire
 * module's reference.conf; a serializer of another protocol lists its own entries and makes its Kryo through
 * {@link #newKryo(ActorRefResolver, List)} (via {@link PooledKryoSerializer}), the one registration path.
 *
 * <p>Every field whose size a frame declares is read through {@link WireFields}, so a frame can make a node allocate
 * at most a few times its own size; strings travel as a varint UTF-8 byte count and the bytes (not Kryo's own string
 * encoding). A frame names its classes by id only, never by name, and only ids from {@link #FIRST_ID}.
 */
public final class WireRegistry {
    /** One registered class: its fixed id and how its serializer is made for a Kryo instance. */
    public record Entry(int id, Class<?> type, Function<ActorRefResolver, Serializer<?>> serializer) {
    }

    /** The lowest id of a graphlane class; Kryo's own registrations (primitives, String) below it never cross nodes. */
    public static final int FIRST_ID = 100;

    /** The registered classes, by id. Ids below {@link #FIRST_ID} are left to Kryo's own registrations. */
    public static final List<Entry> ENTRIES = List.of(
            new Entry(100, LaneId.class, r -> new LaneIdSerializer()),
            new Entry(101, CompletionHandle.class, r -> new HandleSerializer()),
            new Entry(102, Outcome.Succeeded.class, r -> new SucceededSerializer()),
            new Entry(103, Outcome.Failed.class, r -> new FailedSerializer()),
            new Entry(104, LaneProtocol.Ended.class, r -> new EndedSerializer()),
            new Entry(105, LaneProtocol.Resolved.class, r -> new ResolvedSerializer()),
            new Entry(106, LaneProtocol.Subscribe.class, SubscribeSerializer::new),
            new Entry(107, LaneProtocol.Cancel.class, r -> new CancelSerializer()),
            new Entry(108, LaneProtocol.ForgetScope.class, r -> new ForgetSerializer()),
            new Entry(109, WireTensor.class, r -> new TensorSerializer()),
            new Entry(110, ActivationFrame.class, r -> new ActivationSerializer()));

    private WireRegistry() {
    }

    /** The messages (top-level classes sent to actors) among the entries: the ones bound to the serializer. */
    public static final List<Class<?>> MESSAGES = List.of(LaneProtocol.Resolved.class, LaneProtocol.Subscribe.class,
            LaneProtocol.Cancel.class, LaneProtocol.ForgetScope.class, ActivationFrame.class);

    /**
     * A Kryo that requires registration and knows exactly the entries, resolving actor refs through {@code resolver}.
     * It reads no class named by name and no class of Kryo's own below {@link #FIRST_ID}.
     */
    public static Kryo newKryo(ActorRefResolver resolver) {
        return newKryo(resolver, List.of());
    }

    /**
     * The one way a graphlane serializer makes its Kryo: {@link #newKryo(ActorRefResolver)} plus a protocol's own
     * {@code entries} (each serializer that frames a protocol of its own lists them once, with their fixed ids).
     *
     * @throws IllegalArgumentException if an entry's id is below {@link #FIRST_ID} or taken by another entry, or its
     *     class is registered twice (naming both entries), so two classes can never share an id on the wire
     */
    public static Kryo newKryo(ActorRefResolver resolver, List<Entry> entries) {
        Kryo kryo = new Kryo(new WireClassResolver(), null);
        kryo.setRegistrationRequired(true);
        kryo.setReferences(false);
        java.util.Map<Integer, Class<?>> ids = new java.util.HashMap<>();
        java.util.Map<Class<?>, Integer> types = new java.util.HashMap<>();
        for (List<Entry> list : List.of(ENTRIES, entries)) {
            for (Entry e : list) {
                if (e.id() < FIRST_ID) {
                    throw new IllegalArgumentException("wire id " + e.id() + " of " + e.type().getName() + " is below " + FIRST_ID
                            + ", Kryo's own ids");
                }
                Class<?> taken = ids.putIfAbsent(e.id(), e.type());
                if (taken != null) {
                    throw new IllegalArgumentException("wire id " + e.id() + " is given to both " + taken.getName() + " and "
                            + e.type().getName());
                }
                Integer twice = types.putIfAbsent(e.type(), e.id());
                if (twice != null) {
                    throw new IllegalArgumentException(e.type().getName() + " is registered under both wire ids " + twice + " and "
                            + e.id());
                }
                kryo.register(e.type(), e.serializer().apply(resolver), e.id());
            }
        }
        return kryo;
    }

    /** The graphlane classes {@code kryo} (made by {@link #newKryo} and extended) registers, by id. */
    public static SortedMap<Integer, Class<?>> registrations(Kryo kryo) {
        if (!(kryo.getClassResolver() instanceof WireClassResolver wire)) {
            throw new IllegalArgumentException("a Kryo not made by WireRegistry.newKryo");
        }
        return wire.registrations();
    }

    /** Kryo's class resolver, refusing a class by name (which reads an unbounded name) and Kryo's own ids. */
    private static final class WireClassResolver extends DefaultClassResolver {
        @Override
        public Registration readClass(Input input) {
            Registration registration = super.readClass(input);
            if (registration != null && registration.getId() < FIRST_ID) {
                throw new WireFormatException("class id " + registration.getId() + " (" + registration.getType().getSimpleName()
                        + ") is not a graphlane wire class; expected an id from " + FIRST_ID);
            }
            return registration;
        }

        @Override
        protected Registration readName(Input input) {
            throw new WireFormatException("a class named by name; graphlane frames name classes by id only");
        }

        SortedMap<Integer, Class<?>> registrations() {
            SortedMap<Integer, Class<?>> byId = new TreeMap<>();
            for (var e : idToRegistration) {
                if (e.key >= FIRST_ID) {
                    byId.put(e.key, e.value.getType());
                }
            }
            return byId;
        }
    }

    private static final class LaneIdSerializer extends Serializer<LaneId> {
        @Override
        public void write(Kryo kryo, Output out, LaneId lane) {
            WireFields.writeString(out, lane.name(), "LaneId.name");
        }

        @Override
        public LaneId read(Kryo kryo, Input in, Class<? extends LaneId> type) {
            return new LaneId(WireFields.requiredString(in, "LaneId.name"));
        }
    }

    private static final class HandleSerializer extends Serializer<CompletionHandle> {
        @Override
        public void write(Kryo kryo, Output out, CompletionHandle h) {
            WireFields.writeString(out, h.node(), "CompletionHandle.node");
            WireFields.writeString(out, h.lane().name(), "CompletionHandle.lane");
            out.writeVarLong(h.sequence(), true);
        }

        @Override
        public CompletionHandle read(Kryo kryo, Input in, Class<? extends CompletionHandle> type) {
            String node = WireFields.requiredString(in, "CompletionHandle.node");
            LaneId lane = new LaneId(WireFields.requiredString(in, "CompletionHandle.lane"));
            return new CompletionHandle(node, lane, in.readVarLong(true));
        }
    }

    private static final class SucceededSerializer extends Serializer<Outcome.Succeeded> {
        @Override
        public void write(Kryo kryo, Output out, Outcome.Succeeded s) {
        }

        @Override
        public Outcome.Succeeded read(Kryo kryo, Input in, Class<? extends Outcome.Succeeded> type) {
            return Outcome.SUCCESS;
        }
    }

    /** A failure crosses as its class name and message, the first line of each cause, ending in a RemoteFailureException. */
    private static final class FailedSerializer extends Serializer<Outcome.Failed> {
        @Override
        public void write(Kryo kryo, Output out, Outcome.Failed f) {
            Throwable cause = f.cause();
            if (cause instanceof RemoteFailureException remote) {
                WireFields.writeString(out, remote.originalClass(), "Failed.class");
                WireFields.writeText(out, remote.originalMessage(), "Failed.message");
            } else {
                WireFields.writeString(out, cause.getClass().getName(), "Failed.class");
                WireFields.writeText(out, describe(cause), "Failed.message");
            }
        }

        @Override
        public Outcome.Failed read(Kryo kryo, Input in, Class<? extends Outcome.Failed> type) {
            String originalClass = WireFields.string(in, "Failed.class");
            return new Outcome.Failed(new RemoteFailureException(originalClass, WireFields.string(in, "Failed.message")));
        }

        private static String describe(Throwable t) {
            StringBuilder b = new StringBuilder(String.valueOf(t.getMessage()));
            for (Throwable c = t.getCause(); c != null && c != t; c = c.getCause()) {
                b.append(" (caused by ").append(c.getClass().getName()).append(": ").append(c.getMessage()).append(')');
            }
            return b.toString();
        }
    }

    private static final class EndedSerializer extends Serializer<LaneProtocol.Ended> {
        @Override
        public void write(Kryo kryo, Output out, LaneProtocol.Ended e) {
            kryo.writeClassAndObject(out, e.outcome());
            WireFields.writeString(out, e.label(), "Ended.label");
        }

        @Override
        public LaneProtocol.Ended read(Kryo kryo, Input in, Class<? extends LaneProtocol.Ended> type) {
            Outcome outcome = WireFields.object(kryo, in, Outcome.class, "Ended.outcome");
            return new LaneProtocol.Ended(outcome, WireFields.string(in, "Ended.label"));
        }
    }

    private static final class ResolvedSerializer extends Serializer<LaneProtocol.Resolved> {
        @Override
        public void write(Kryo kryo, Output out, LaneProtocol.Resolved r) {
            if (!(r.resolution() instanceof LaneProtocol.Ended ended)) {
                throw new WireFormatException("Resolved(" + r.handle() + ") carries a " + r.resolution().getClass().getSimpleName()
                        + " resolution, which holds a device completion and cannot cross nodes; expected Ended");
            }
            kryo.writeObject(out, r.handle());
            kryo.writeObject(out, ended);
        }

        @Override
        public LaneProtocol.Resolved read(Kryo kryo, Input in, Class<? extends LaneProtocol.Resolved> type) {
            CompletionHandle handle = kryo.readObject(in, CompletionHandle.class);
            return new LaneProtocol.Resolved(handle, kryo.readObject(in, LaneProtocol.Ended.class));
        }
    }

    private static final class SubscribeSerializer extends Serializer<LaneProtocol.Subscribe> {
        private final ActorRefResolver resolver;

        SubscribeSerializer(ActorRefResolver resolver) {
            this.resolver = resolver;
        }

        @Override
        public void write(Kryo kryo, Output out, LaneProtocol.Subscribe s) {
            kryo.writeObject(out, s.handle());
            out.writeVarLong(s.scope(), false);
            WireFields.writeString(out, resolver.toSerializationFormat(s.subscriber()), "Subscribe.subscriber");
        }

        @Override
        public LaneProtocol.Subscribe read(Kryo kryo, Input in, Class<? extends LaneProtocol.Subscribe> type) {
            CompletionHandle handle = kryo.readObject(in, CompletionHandle.class);
            long scope = in.readVarLong(false);
            ActorRef<LaneProtocol.Resolved> subscriber = resolver.resolveActorRef(
                    WireFields.requiredString(in, "Subscribe.subscriber"));
            return new LaneProtocol.Subscribe(handle, scope, subscriber);
        }
    }

    private static final class CancelSerializer extends Serializer<LaneProtocol.Cancel> {
        @Override
        public void write(Kryo kryo, Output out, LaneProtocol.Cancel c) {
            out.writeVarLong(c.scope(), false);
        }

        @Override
        public LaneProtocol.Cancel read(Kryo kryo, Input in, Class<? extends LaneProtocol.Cancel> type) {
            return new LaneProtocol.Cancel(in.readVarLong(false));
        }
    }

    private static final class ForgetSerializer extends Serializer<LaneProtocol.ForgetScope> {
        @Override
        public void write(Kryo kryo, Output out, LaneProtocol.ForgetScope f) {
            out.writeVarLong(f.scope(), false);
        }

        @Override
        public LaneProtocol.ForgetScope read(Kryo kryo, Input in, Class<? extends LaneProtocol.ForgetScope> type) {
            return new LaneProtocol.ForgetScope(in.readVarLong(false));
        }
    }

    /** dtype name, rank, dims, byte count, then the raw little-endian bytes (read straight into the tensor's array). */
    private static final class TensorSerializer extends Serializer<WireTensor> {
        @Override
        public void write(Kryo kryo, Output out, WireTensor t) {
            WireFields.writeString(out, t.dtype().name(), "WireTensor.dtype");
            long[] dims = t.shape().dims();
            out.writeVarInt(dims.length, true);
            for (long d : dims) {
                out.writeVarLong(d, true);
            }
            ByteBuffer bytes = t.bytes();
            out.writeVarInt(bytes.remaining(), true);
            byte[] chunk = new byte[Math.min(bytes.remaining(), 64 * 1024)];
            while (bytes.hasRemaining()) {
                int n = Math.min(chunk.length, bytes.remaining());
                bytes.get(chunk, 0, n);
                out.writeBytes(chunk, 0, n);
            }
        }

        @Override
        public WireTensor read(Kryo kryo, Input in, Class<? extends WireTensor> type) {
            String name = WireFields.string(in, "WireTensor.dtype");
            DType dtype = DType.fromName(name).orElseThrow(() -> new WireFormatException(
                    "WireTensor.dtype: names dtype '" + name + "'; expected one of " + DType.supportedNames()));
            int rank = WireFields.count(in, "WireTensor.dims", WireFields.MAX_RANK);
            long[] dims = new long[rank];
            for (int i = 0; i < rank; i++) {
                dims[i] = in.readVarLong(true);
            }
            Shape shape;
            long expected;
            try {
                shape = Shape.of(dims);
                expected = shape.byteSize(dtype);
            } catch (IllegalArgumentException e) {
                throw new WireFormatException("WireTensor.dims: " + e.getMessage());
            }
            int length = WireFields.length(in, "WireTensor.bytes", 1);
            if (length != expected) {
                throw new WireFormatException("WireTensor.bytes: a " + dtype + shape + " tensor declares " + length
                        + " bytes; expected " + expected);
            }
            return WireTensor.wrapping(dtype, shape, in.readBytes(length));
        }
    }

    private static final class ActivationSerializer extends Serializer<ActivationFrame> {
        @Override
        public void write(Kryo kryo, Output out, ActivationFrame a) {
            kryo.writeObject(out, a.producer());
            out.writeVarLong(a.requestId(), false);
            out.writeVarInt(a.step(), true);
            kryo.writeObject(out, a.activation());
        }

        @Override
        public ActivationFrame read(Kryo kryo, Input in, Class<? extends ActivationFrame> type) {
            CompletionHandle producer = kryo.readObject(in, CompletionHandle.class);
            long request = in.readVarLong(false);
            int step = in.readVarInt(true);
            return new ActivationFrame(producer, request, step, kryo.readObject(in, WireTensor.class));
        }
    }
}
