package io.graphlane.actors.wire;

import com.esotericsoftware.kryo.Kryo;
import com.esotericsoftware.kryo.KryoException;
import com.esotericsoftware.kryo.io.Input;
import com.esotericsoftware.kryo.io.Output;
import com.esotericsoftware.kryo.util.Pool;
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
 * class or has trailing bytes, is refused with a logged {@link WireFormatException}: Pekko drops that one message
 * and the node stays up. A subclass says which classes (with their fixed ids) its Kryo knows.
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

    protected PooledKryoSerializer(ExtendedActorSystem system) {
        this.system = system;
    }

    /** A Kryo that knows exactly the classes this serializer frames, each with its fixed id. */
    protected abstract Kryo newKryo(ActorRefResolver refs);

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

    /** Reads one frame; refuses (logged) an unknown class id, a truncated frame or trailing bytes. */
    @Override
    public final Object fromBinaryJava(byte[] bytes, Class<?> manifest) {
        Kryo kryo = pool.obtain();
        try (Input in = new Input(bytes)) {
            Object message = kryo.readClassAndObject(in);
            if (in.position() != bytes.length) {
                throw new WireFormatException("refused a frame of " + bytes.length + " bytes: " + (bytes.length - in.position())
                        + " trailing bytes after a " + (message == null ? "null" : message.getClass().getName()));
            }
            if (message == null) {
                throw new WireFormatException("refused a frame of " + bytes.length + " bytes: it holds null, not a message");
            }
            return message;
        } catch (KryoException | IllegalArgumentException | IndexOutOfBoundsException e) {
            WireFormatException refused = new WireFormatException("refused a frame of " + bytes.length + " bytes: "
                    + firstLine(e) + " (truncated, or sent by a node with other registrations)", e);
            LOG.warn("{}", refused.getMessage());
            throw refused;
        } catch (WireFormatException e) {
            LOG.warn("{}", e.getMessage());
            throw e;
        } finally {
            pool.free(kryo);
        }
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

    private ActorRefResolver resolver() {
        ActorRefResolver r = resolver;
        if (r == null) {
            r = ActorRefResolver.get(Adapter.toTyped(system));
            resolver = r;
        }
        return r;
    }

    private static String firstLine(Throwable e) {
        String m = String.valueOf(e.getMessage());
        int nl = m.indexOf('\n');
        return nl < 0 ? m : m.substring(0, nl);
    }
}
