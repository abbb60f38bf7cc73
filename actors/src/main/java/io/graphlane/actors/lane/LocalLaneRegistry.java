package io.graphlane.actors.lane;

import io.graphlane.core.graph.LaneId;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.pekko.actor.typed.ActorRef;

/** A registry of the lane actors of one JVM: a concurrent map filled as the lanes are spawned. */
public final class LocalLaneRegistry implements LaneRegistry {
    private final ConcurrentHashMap<LaneId, ActorRef<LaneProtocol.Command>> lanes = new ConcurrentHashMap<>();
    private final AtomicLong sequences = new AtomicLong();
    private final AtomicLong requests = new AtomicLong(LaneProtocol.NO_SCOPE);

    /**
     * Records {@code ref} as the owner of {@code lane}.
     *
     * @throws IllegalArgumentException if another actor already owns the lane
     */
    public void register(LaneId lane, ActorRef<LaneProtocol.Command> ref) {
        Objects.requireNonNull(ref, "ref");
        ActorRef<LaneProtocol.Command> before = lanes.putIfAbsent(lane, ref);
        if (before != null && !before.equals(ref)) {
            throw new IllegalArgumentException("lane '" + lane + "' is already owned by " + before.path() + "; cannot also register "
                    + ref.path());
        }
    }

    @Override
    public ActorRef<LaneProtocol.Command> lane(LaneId lane) {
        ActorRef<LaneProtocol.Command> ref = lanes.get(lane);
        if (ref == null) {
            throw new UnknownLaneException(lane, lanes.keySet());
        }
        return ref;
    }

    @Override
    public Set<LaneId> lanes() {
        return Set.copyOf(lanes.keySet());
    }

    @Override
    public long reserveSequences(int count) {
        if (count < 0) {
            throw new IllegalArgumentException("cannot reserve a negative number of handle sequences: " + count);
        }
        return sequences.getAndAdd(count);
    }

    @Override
    public long newScope() {
        return requests.incrementAndGet();
    }
}
