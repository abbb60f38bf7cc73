package io.graphlane.actors.wire;

import io.graphlane.actors.lane.LaneProtocol;
import java.util.Arrays;
import org.apache.pekko.actor.ExtendedActorSystem;
import org.apache.pekko.serialization.JSerializer;

/**
 * Stands in for {@link KryoWireSerializer} on a sending node in tests (same identifier): frames like it, but
 * sends {@code Cancel(-1)} truncated, {@code Cancel(-2)} as a frame naming a class id no node registers and
 * {@code Cancel(-3)} as a tensor frame declaring 2^31-1 bytes it does not hold.
 */
public final class CorruptingWireSerializer extends JSerializer {
    /** A tensor frame (class id 109) of dtype U8, shape [2^31-1], declaring 2^31-1 bytes and holding none. */
    private static final byte[] TENSOR_BOMB = {111, 3, 'U', '8', 1, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, 0x07,
            (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, 0x07};

    private final KryoWireSerializer real;

    /** Pekko constructs it from pekko.actor.serializers. */
    public CorruptingWireSerializer(ExtendedActorSystem system) {
        this.real = new KryoWireSerializer(system);
    }

    @Override
    public int identifier() {
        return KryoWireSerializer.IDENTIFIER;
    }

    @Override
    public boolean includeManifest() {
        return false;
    }

    @Override
    public byte[] toBinary(Object o) {
        byte[] bytes = real.toBinary(o);
        if (o instanceof LaneProtocol.Cancel c && c.scope() == -1) {
            return Arrays.copyOf(bytes, bytes.length - 1);
        }
        if (o instanceof LaneProtocol.Cancel c && c.scope() == -2) {
            return new byte[] {(byte) 0xE9, 0x07, 0x01};
        }
        if (o instanceof LaneProtocol.Cancel c && c.scope() == -3) {
            return TENSOR_BOMB;
        }
        return bytes;
    }

    @Override
    public Object fromBinaryJava(byte[] bytes, Class<?> manifest) {
        return real.fromBinaryJava(bytes, manifest);
    }
}
