package io.graphlane.actors.wire;

import com.esotericsoftware.kryo.Kryo;
import org.apache.pekko.actor.ExtendedActorSystem;
import org.apache.pekko.actor.typed.ActorRefResolver;

/**
 * The Pekko serializer of every graphlane message that crosses nodes: Kryo 5 with registration required and
 * the fixed ids of {@link WireRegistry}, pooled Kryo instances, typed actor refs through {@link ActorRefResolver};
 * refusals as {@link PooledKryoSerializer} describes.
 */
public final class KryoWireSerializer extends PooledKryoSerializer {
    /** This serializer's Pekko identifier; the same on every node. */
    public static final int IDENTIFIER = 474_201;

    /** The serializer of {@code system}; Pekko constructs it from pekko.actor.serializers. */
    public KryoWireSerializer(ExtendedActorSystem system) {
        super(system);
    }

    @Override
    public int identifier() {
        return IDENTIFIER;
    }

    @Override
    protected Kryo newKryo(ActorRefResolver refs) {
        return WireRegistry.newKryo(refs);
    }
}
