package io.graphlane.actors.wire;

import com.esotericsoftware.kryo.Kryo;
import com.esotericsoftware.kryo.KryoException;
import com.esotericsoftware.kryo.io.Input;
import com.esotericsoftware.kryo.io.Output;
import com.esotericsoftware.kryo.util.Pool;
import org.apache.pekko.actor.ExtendedActorSystem;
import org.apache.pekko.actor.typed.ActorRefResolver;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.serialization.JSerializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The Pekko serializer of every graphlane message that crosses nodes: Kryo 5 with registration required and
 * the fixed ids of {@link WireRegistry}, pooled Kryo instances, typed actor refs through {@link ActorRefResolver}.
 * A frame is the registered class id followed by the object; a message of an unregistered class, or a frame
 * that is truncated, names an unknown class or has trailing bytes, is refused with a logged
 * {@link WireFormatException}: Pekko drops that one message and the node stays up.
 */
public final class KryoWireSerializer extends JSerializer {
    /** This serializer's Pekko identifier; the same on every node. */
    public static final int IDENTIFIER = 474_201;

    private static final Logger LOG = LoggerFactory.getLogger(KryoWireSerializer.class);

    private final ExtendedActorSystem system;
    private volatile ActorRefResolver resolver;
    private final Pool<Kryo> pool = new Pool<>(true, false, 32) {
        @Override
        protected Kryo create() {
            return WireRegistry.newKryo(resolver());
        }
    };

    /** The serializer of {@code system}; Pekko constructs it from pekko.actor.serializers. */
    public KryoWireSerializer(ExtendedActorSystem system) {
        this.system = system;
    }

    @Override
    public int identifier() {
        return IDENTIFIER;
    }

    @Override
    public boolean includeManifest() {
        return false;
    }

    /** Frames {@code message}; refuses (logged) a class that {@link WireRegistry} does not list. */
    @Override
    public byte[] toBinary(Object message) {
        Kryo kryo = pool.obtain();
        try (Output out = new Output(256, -1)) {
            kryo.writeClassAndObject(out, message);
            return out.toBytes();
        } catch (IllegalArgumentException | KryoException | WireFormatException e) {
            WireFormatException refused = e instanceof WireFormatException w ? w : new WireFormatException(
                    "cannot frame a " + message.getClass().getName() + ": " + firstLine(e)
                            + "; only the classes of io.graphlane.actors.wire.WireRegistry cross nodes", e);
            LOG.warn("refused outgoing message: {}", refused.getMessage());
            throw refused;
        } finally {
            pool.free(kryo);
        }
    }

    /** Reads one frame; refuses (logged) an unknown class id, a truncated frame or trailing bytes. */
    @Override
    public Object fromBinaryJava(byte[] bytes, Class<?> manifest) {
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
                    + firstLine(e) + " (truncated, or sent by a node with another WireRegistry)", e);
            LOG.warn("{}", refused.getMessage());
            throw refused;
        } catch (WireFormatException e) {
            LOG.warn("{}", e.getMessage());
            throw e;
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
