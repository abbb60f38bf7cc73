package io.graphlane.lanes;

/** A node's own work threw: names the node and its lane; the cause is what the work threw. */
public final class NodeFailedException extends RuntimeException {
    private final String node;
    private final String lane;

    NodeFailedException(String node, String lane, Throwable cause) {
        super("node '" + node + "' on lane '" + lane + "' failed: " + cause, cause);
        this.node = node;
        this.lane = lane;
    }

    /** The node whose work threw. */
    public String node() {
        return node;
    }

    /** Its lane. */
    public String lane() {
        return lane;
    }
}
