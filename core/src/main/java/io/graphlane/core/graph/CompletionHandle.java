package io.graphlane.core.graph;

import java.util.Objects;

/**
 * A value that names the exact completion of one submission: the node and lane that own
 * it and a sequence number unique on that lane. A handle can be named before its work is
 * submitted, carried in messages to other lanes (and, as an identifier, to other nodes),
 * and resolved by the owning lane to the backend completion.
 */
public record CompletionHandle(String node, LaneId lane, long sequence) {
    /** The node name of handles created in this JVM when no cluster address applies. */
    public static final String LOCAL_NODE = "local";

    public CompletionHandle {
        Objects.requireNonNull(node, "node");
        Objects.requireNonNull(lane, "lane");
        if (sequence < 0) {
            throw new IllegalArgumentException("handle sequence must be >= 0, got " + sequence);
        }
    }

    public static CompletionHandle local(LaneId lane, long sequence) {
        return new CompletionHandle(LOCAL_NODE, lane, sequence);
    }

    @Override
    public String toString() {
        return (LOCAL_NODE.equals(node) ? "" : node + "/") + lane + "#" + sequence;
    }
}
