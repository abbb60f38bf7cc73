package io.graphlane.actors.wire;

import com.esotericsoftware.kryo.Kryo;
import com.esotericsoftware.kryo.KryoException;
import com.esotericsoftware.kryo.io.Input;
import com.esotericsoftware.kryo.io.Output;
import com.esotericsoftware.kryo.util.Pool;
import java.util.List;
import java.util.SortedMap;
import java.util.function.Function;
import org.apache.pekko.actor.ExtendedActorSystem;
import org.apache.pekko.actor.typed.ActorRefResolver;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.serialization.JSerializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A Pekko serializer over pooled Kryo 5 instances with registration required: a frame is the registered class id
 * followed by the object. A message of an unregistered class, or a frame that is truncated, names an unknown
 * class, declares a field larger than the frame or its cap ({@link WireFields}) or has trailing bytes, is refused
 * with a logged {@link WireFormatException}: Pekko's Artery logs and drops that one message (it catches every
 * non-fatal exception of a serializer) and the node stays up. No frame makes the node allocate more than a few
 * times the frame's size. A subclass lists the classes of its own protocol (with their fixed ids) as
 * {@link WireRegistry.Entry}s; its Kryo knows those and the registry's, nothing else.
 */
public abstract class PooledKryoSerializer extends JSerializer {
    private static final Logger LOG = LoggerFactory.getLogger(PooledKryoSerializer.class);

    private final ExtendedActorSystem system;
    private volatile ActorRefResolver resolver;
    private final Pool<Kryo> pool = new Pool<>(true, false, 32) {
        @Override
        protected Kryo create() {
            return newKryo(resolver());
        }
    };

    private final List<WireRegistry.Entry> protocol;

    /** A serializer of the wire registry's classes and {@code protocol}'s, each with its fixed id. */
    protected PooledKryoSerializer(ExtendedActorSystem system, List<WireRegistry.Entry> protocol) {
        this.system = system;
        this.protocol = List.copyOf(protocol);
    }

    /** A Kryo that knows exactly the classes this serializer frames, each with its fixed id. */
    protected final Kryo newKryo(ActorRefResolver refs) {
        return WireRegistry.newKryo(refs, protocol);
    }

    @Override
    public final boolean includeManifest() {
        return false;
    }

    /** Frames {@code message}; refuses (logged) a class this serializer's Kryo does not register. */
    @Override
    public final byte[] toBinary(Object message) {
        Kryo kryo = pool.obtain();
        try (Output out = new Output(256, -1)) {
            kryo.writeClassAndObject(out, message);
            return out.toBytes();
        } catch (IllegalArgumentException | KryoException | WireFormatException e) {
            WireFormatException refused = e instanceof WireFormatException w ? w : new WireFormatException(
                    "cannot frame a " + message.getClass().getName() + ": " + firstLine(e)
                            + "; only registered classes cross nodes (" + getClass().getSimpleName() + ")", e);
            LOG.warn("refused outgoing message: {}", refused.getMessage());
            throw refused;
        } finally {
            pool.free(kryo);
        }
    }

    /** Reads one frame; refuses (logged) what {@link #decode} refuses. */
    @Override
    public final Object fromBinaryJava(byte[] bytes, Class<?> manifest) {
        return decode(new Input(bytes), bytes.length);
    }

    /**
     * Reads the one message that fills {@code in} (a whole frame of {@code frameBytes} bytes in memory, to its limit).
     * Every failure, whatever its cause, is a logged {@link WireFormatException} that names the frame's size: a
     * truncated frame, an unknown class id, a field that declares more than the frame holds or its cap (see
     * {@link WireFields}), trailing bytes, or a null.
     */
    protected final Object decode(Input in, int frameBytes) {
        Kryo kryo = pool.obtain();
        try {
            Object message = kryo.readClassAndObject(in);
            if (in.position() != in.limit()) {
                throw new WireFormatException((in.limit() - in.position()) + " trailing bytes after a "
                        + (message == null ? "null" : message.getClass().getName()));
            }
            if (message == null) {
                throw new WireFormatException("it holds null, not a message");
            }
            return message;
        } catch (WireFormatException e) {
            throw refused(frameBytes, e.getMessage(), e);
        } catch (RuntimeException e) {
            // Kryo's own refusals (truncated, unknown id) and a record's refusal of what a hostile frame holds.
            throw refused(frameBytes, firstLine(e) + " (truncated, or sent by a node with other registrations)", e);
        } finally {
            pool.free(kryo);
        }
    }

    private static WireFormatException refused(int frameBytes, String why, RuntimeException cause) {
        WireFormatException refused = new WireFormatException("refused a frame of " + frameBytes + " bytes: " + why, cause);
        LOG.warn("{}", refused.getMessage());
        return refused;
    }

    /**
     * Runs {@code use} with one of this serializer's pooled Kryo instances, for a subclass's own framing path (such
     * as Artery's ByteBuffer one); the instance goes back to the pool when {@code use} returns or throws.
     */
    protected final <R> R withKryo(Function<Kryo, R> use) {
        Kryo kryo = pool.obtain();
        try {
            return use.apply(kryo);
        } finally {
            pool.free(kryo);
        }
    }

    /** The graphlane classes this serializer frames, by their fixed ids. */
    public final SortedMap<Integer, Class<?>> registrations() {
        return withKryo(WireRegistry::registrations);
    }

    private ActorRefResolver resolver() {
        ActorRefResolver r = resolver;
        if (r == null) {
            r = ActorRefResolver.get(Adapter.toTyped(system));
            resolver = r;
        }
        return r;
    }

    /** The first line of {@code e}'s message, for a refusal that names it. */
    protected static String firstLine(Throwable e) {
        String m = String.valueOf(e.getMessage());
        int nl = m.indexOf('\n');
        return nl < 0 ? m : m.substring(0, nl);
    }
}
