package io.graphlane.core.graph;

import java.util.Objects;

/** The name of one lane: one executor forked from a device, owned by one lane actor. */
public record LaneId(String name) implements Comparable<LaneId> {
    public LaneId {
        Objects.requireNonNull(name, "lane name");
        if (name.isBlank()) {
            throw new IllegalArgumentException("a lane name must not be blank");
        }
    }

    public static LaneId of(String name) {
        return new LaneId(name);
    }

    @Override
    public int compareTo(LaneId o) {
        return name.compareTo(o.name);
    }

    @Override
    public String toString() {
        return name;
    }
}
