package io.graphlane.actors.wire;

import java.util.List;
import org.apache.pekko.actor.ExtendedActorSystem;

/**
 * The Pekko serializer of every graphlane message that crosses nodes: Kryo 5 with registration required and
 * the fixed ids of {@link WireRegistry}, pooled Kryo instances, typed actor refs through {@code ActorRefResolver};
 * refusals as {@link PooledKryoSerializer} describes.
 */
public final class KryoWireSerializer extends PooledKryoSerializer {
    /** This serializer's Pekko identifier; the same on every node. */
    public static final int IDENTIFIER = 474_201;

    /** The serializer of {@code system}; Pekko constructs it from pekko.actor.serializers. */
    public KryoWireSerializer(ExtendedActorSystem system) {
        super(system, List.of());
    }

    @Override
    public int identifier() {
        return IDENTIFIER;
    }
}
