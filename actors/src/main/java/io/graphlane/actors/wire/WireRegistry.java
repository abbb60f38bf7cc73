package io.graphlane.actors.wire;

import com.esotericsoftware.kryo.Kryo;
import com.esotericsoftware.kryo.Serializer;
import com.esotericsoftware.kryo.io.Input;
import com.esotericsoftware.kryo.io.Output;
import io.graphlane.actors.lane.LaneProtocol;
import io.graphlane.core.completion.Outcome;
import io.graphlane.core.graph.CompletionHandle;
import io.graphlane.core.graph.LaneId;
import io.graphlane.core.tensor.DType;
import io.graphlane.core.tensor.Shape;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.function.Function;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorRefResolver;

/**
 * Every class that crosses nodes, with its fixed Kryo id and serializer. The ids are part of the wire format:
 * every node must register the same classes under the same ids, so an entry is never renumbered or reused —
 * new classes take new ids. Messages listed here are bound to {@link KryoWireSerializer} in the actors
 * module's reference.conf.
 */
public final class WireRegistry {
    /** One registered class: its fixed id and how its serializer is made for a Kryo instance. */
    public record Entry(int id, Class<?> type, Function<ActorRefResolver, Serializer<?>> serializer) {
    }

    /** The registered classes, by id. Ids below 100 are left to Kryo's own registrations. */
    public static final List<Entry> ENTRIES = List.of(
            new Entry(100, LaneId.class, r -> new LaneIdSerializer()),
            new Entry(101, CompletionHandle.class, r -> new HandleSerializer()),
            new Entry(102, Outcome.Succeeded.class, r -> new SucceededSerializer()),
            new Entry(103, Outcome.Failed.class, r -> new FailedSerializer()),
            new Entry(104, LaneProtocol.Ended.class, r -> new EndedSerializer()),
            new Entry(105, LaneProtocol.Resolved.class, r -> new ResolvedSerializer()),
            new Entry(106, LaneProtocol.Subscribe.class, SubscribeSerializer::new),
            new Entry(107, LaneProtocol.Cancel.class, r -> new CancelSerializer()),
            new Entry(108, LaneProtocol.ForgetRequest.class, r -> new ForgetSerializer()),
            new Entry(109, WireTensor.class, r -> new TensorSerializer()),
            new Entry(110, ActivationFrame.class, r -> new ActivationSerializer()));

    private WireRegistry() {
    }

    /** The messages (top-level classes sent to actors) among the entries: the ones bound to the serializer. */
    public static final List<Class<?>> MESSAGES = List.of(LaneProtocol.Resolved.class, LaneProtocol.Subscribe.class,
            LaneProtocol.Cancel.class, LaneProtocol.ForgetRequest.class, ActivationFrame.class);

    /** A Kryo that requires registration and knows exactly the entries, resolving actor refs through {@code resolver}. */
    public static Kryo newKryo(ActorRefResolver resolver) {
        Kryo kryo = new Kryo();
        kryo.setRegistrationRequired(true);
        kryo.setReferences(false);
        for (Entry e : ENTRIES) {
            kryo.register(e.type(), e.serializer().apply(resolver), e.id());
        }
        return kryo;
    }

    private static final class LaneIdSerializer extends Serializer<LaneId> {
        @Override
        public void write(Kryo kryo, Output out, LaneId lane) {
            out.writeString(lane.name());
        }

        @Override
        public LaneId read(Kryo kryo, Input in, Class<? extends LaneId> type) {
            return new LaneId(in.readString());
        }
    }

    private static final class HandleSerializer extends Serializer<CompletionHandle> {
        @Override
        public void write(Kryo kryo, Output out, CompletionHandle h) {
            out.writeString(h.node());
            out.writeString(h.lane().name());
            out.writeVarLong(h.sequence(), true);
        }

        @Override
        public CompletionHandle read(Kryo kryo, Input in, Class<? extends CompletionHandle> type) {
            return new CompletionHandle(in.readString(), new LaneId(in.readString()), in.readVarLong(true));
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
                out.writeString(remote.originalClass());
                out.writeString(remote.originalMessage());
            } else {
                out.writeString(cause.getClass().getName());
                out.writeString(describe(cause));
            }
        }

        @Override
        public Outcome.Failed read(Kryo kryo, Input in, Class<? extends Outcome.Failed> type) {
            return new Outcome.Failed(new RemoteFailureException(in.readString(), in.readString()));
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
            out.writeString(e.label());
        }

        @Override
        public LaneProtocol.Ended read(Kryo kryo, Input in, Class<? extends LaneProtocol.Ended> type) {
            Outcome outcome = expect(kryo.readClassAndObject(in), Outcome.class, "Ended.outcome");
            return new LaneProtocol.Ended(outcome, in.readString());
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
            out.writeVarLong(s.requestId(), false);
            out.writeString(resolver.toSerializationFormat(s.subscriber()));
        }

        @Override
        public LaneProtocol.Subscribe read(Kryo kryo, Input in, Class<? extends LaneProtocol.Subscribe> type) {
            CompletionHandle handle = kryo.readObject(in, CompletionHandle.class);
            long request = in.readVarLong(false);
            ActorRef<LaneProtocol.Resolved> subscriber = resolver.resolveActorRef(in.readString());
            return new LaneProtocol.Subscribe(handle, request, subscriber);
        }
    }

    private static final class CancelSerializer extends Serializer<LaneProtocol.Cancel> {
        @Override
        public void write(Kryo kryo, Output out, LaneProtocol.Cancel c) {
            out.writeVarLong(c.requestId(), false);
        }

        @Override
        public LaneProtocol.Cancel read(Kryo kryo, Input in, Class<? extends LaneProtocol.Cancel> type) {
            return new LaneProtocol.Cancel(in.readVarLong(false));
        }
    }

    private static final class ForgetSerializer extends Serializer<LaneProtocol.ForgetRequest> {
        @Override
        public void write(Kryo kryo, Output out, LaneProtocol.ForgetRequest f) {
            out.writeVarLong(f.requestId(), false);
        }

        @Override
        public LaneProtocol.ForgetRequest read(Kryo kryo, Input in, Class<? extends LaneProtocol.ForgetRequest> type) {
            return new LaneProtocol.ForgetRequest(in.readVarLong(false));
        }
    }

    /** dtype name, rank, dims, byte count, then the raw little-endian bytes. */
    private static final class TensorSerializer extends Serializer<WireTensor> {
        @Override
        public void write(Kryo kryo, Output out, WireTensor t) {
            out.writeString(t.dtype().name());
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
            String name = in.readString();
            DType dtype = DType.fromName(name).orElseThrow(() -> new WireFormatException(
                    "tensor frame names dtype '" + name + "'; expected one of " + DType.supportedNames()));
            int rank = in.readVarInt(true);
            if (rank > 16) {
                throw new WireFormatException("tensor frame has rank " + rank + "; expected at most 16");
            }
            long[] dims = new long[rank];
            for (int i = 0; i < rank; i++) {
                dims[i] = in.readVarLong(true);
            }
            Shape shape = Shape.of(dims);
            int length = in.readVarInt(true);
            if (length != shape.byteSize(dtype)) {
                throw new WireFormatException("tensor frame " + dtype + shape + " declares " + length + " bytes; expected "
                        + shape.byteSize(dtype));
            }
            return WireTensor.of(dtype, shape, ByteBuffer.wrap(in.readBytes(length)));
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

    private static <T> T expect(Object value, Class<T> type, String field) {
        if (!type.isInstance(value)) {
            throw new WireFormatException(field + ": expected a " + type.getSimpleName() + ", found "
                    + (value == null ? "null" : value.getClass().getName()));
        }
        return type.cast(value);
    }
}
