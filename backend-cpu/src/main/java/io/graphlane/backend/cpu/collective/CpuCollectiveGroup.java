package io.graphlane.backend.cpu.collective;

import io.graphlane.backend.cpu.CpuExecutor;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * A collective group of CPU lanes: member {@code i} is the {@code i}-th lane, and its collectives
 * run on that lane's worker through {@link #member(int)}. The members exchange messages through a
 * {@link CollectiveTransport} (in one JVM, {@link InProcessTransport}).
 */
public final class CpuCollectiveGroup {
    private final String name;
    private final List<CpuExecutor> lanes;
    private final Map<CpuExecutor, Integer> ranks = new IdentityHashMap<>();
    private final CollectiveSettings settings;
    private final List<CpuCollectiveMember> members;

    private CpuCollectiveGroup(String name, List<CpuExecutor> lanes, CollectiveSettings settings, CollectiveTransport transport) {
        this.name = Objects.requireNonNull(name, "name");
        this.lanes = List.copyOf(lanes);
        this.settings = Objects.requireNonNull(settings, "settings");
        if (this.lanes.isEmpty()) {
            throw new IllegalArgumentException("collective group " + name + " needs at least one lane");
        }
        if (transport.size() != this.lanes.size()) {
            throw new IllegalArgumentException("collective group " + name + " has " + this.lanes.size() + " lanes but its transport connects "
                    + transport.size() + " members");
        }
        for (int i = 0; i < this.lanes.size(); i++) {
            Integer before = ranks.put(this.lanes.get(i), i);
            if (before != null) {
                throw new IllegalArgumentException("collective group " + name + ": lane " + this.lanes.get(i) + " is both member " + before
                        + " and member " + i + "; each member needs its own lane");
            }
        }
        List<CpuCollectiveMember> made = new ArrayList<>();
        for (int i = 0; i < this.lanes.size(); i++) {
            made.add(new CpuCollectiveMember(name, i, transport, settings));
        }
        this.members = Collections.unmodifiableList(made);
    }

    /** A group over {@code lanes} in this JVM (member i is lane i), exchanging through shared queues. */
    public static CpuCollectiveGroup inProcess(String name, List<CpuExecutor> lanes, CollectiveSettings settings) {
        return new CpuCollectiveGroup(name, lanes, settings, new InProcessTransport(lanes.size()));
    }

    /** A group over {@code lanes} whose members exchange through {@code transport}. */
    public static CpuCollectiveGroup over(String name, List<CpuExecutor> lanes, CollectiveSettings settings, CollectiveTransport transport) {
        return new CpuCollectiveGroup(name, lanes, settings, Objects.requireNonNull(transport, "transport"));
    }

    /** The group's name, used in every error. */
    public String name() {
        return name;
    }

    /** The number of members. */
    public int size() {
        return lanes.size();
    }

    /** The member lanes in rank order. */
    public List<CpuExecutor> lanes() {
        return lanes;
    }

    /** The group's timeouts and chunking. */
    public CollectiveSettings settings() {
        return settings;
    }

    /**
     * The rank of {@code lane} in this group.
     *
     * @throws IllegalArgumentException naming the lane and the members if it is not one of them
     */
    public int rankOf(CpuExecutor lane) {
        Integer rank = ranks.get(lane);
        if (rank == null) {
            throw new IllegalArgumentException("lane " + lane + " is not a member of collective group " + name + " (members: " + lanes + ")");
        }
        return rank;
    }

    /** Member {@code rank}: its collectives run synchronously on the calling thread, which must be its lane's worker. */
    public CpuCollectiveMember member(int rank) {
        if (rank < 0 || rank >= members.size()) {
            throw new IndexOutOfBoundsException("collective group " + name + " has members 0.." + (members.size() - 1) + ", not " + rank);
        }
        return members.get(rank);
    }

    @Override
    public String toString() {
        return "CpuCollectiveGroup(" + name + ", " + lanes + ")";
    }
}
