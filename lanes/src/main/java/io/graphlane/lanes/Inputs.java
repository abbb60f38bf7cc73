package io.graphlane.lanes;

import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.Objects;

/**
 * The values a node's producers returned, by producer name. Only a node's own producers (the names it runs
 * {@code after}) can be read: their works completed before this one started, and everything they did is visible here
 * (see {@link Lanes}, memory visibility). Reading any other node is refused, since nothing orders it before this one.
 */
public final class Inputs {
    private final String node;
    private final String lane;
    private final List<String> producers;
    private final Map<String, Integer> index;
    private final AtomicReferenceArray<Object> values;

    Inputs(String node, String lane, List<String> producers, Map<String, Integer> index, AtomicReferenceArray<Object> values) {
        this.node = node;
        this.lane = lane;
        this.producers = producers;
        this.index = index;
        this.values = values;
    }

    /**
     * The value producer {@code name} returned, typed as the caller reads it ({@code int x = in.get("read");}).
     *
     * @throws IllegalArgumentException if {@code name} is not one of this node's producers
     */
    @SuppressWarnings("unchecked")
    public <T> T get(String name) {
        Objects.requireNonNull(name, "producer name");
        if (!producers.contains(name)) {
            throw new IllegalArgumentException("node '" + node + "' on lane '" + lane + "' reads '" + name
                    + "', which it does not run after (its producers: " + (producers.isEmpty() ? "none" : String.join(", ", producers))
                    + ")");
        }
        return (T) values.get(index.get(name));
    }

    /**
     * The value producer {@code name} returned, checked to be a {@code type}.
     *
     * @throws IllegalArgumentException if {@code name} is not one of this node's producers, or its value is not a
     *     {@code type}
     */
    public <T> T get(String name, Class<T> type) {
        Object value = get(name);
        if (value != null && !type.isInstance(value)) {
            throw new IllegalArgumentException("node '" + node + "' on lane '" + lane + "' reads '" + name + "' as "
                    + type.getName() + ", but it returned a " + value.getClass().getName());
        }
        return type.cast(value);
    }

    /** The names this node runs after, in the order it declared them. */
    public List<String> producers() {
        return producers;
    }
}
