package io.graphlane.cluster.pipeline;

import io.graphlane.core.GraphlaneException;

/** A request failed because the work of one pipeline stage failed on some node; the cause is that work's failure. */
public final class StageFailedException extends GraphlaneException {
    private static final long serialVersionUID = 1L;

    private final int stage;
    private final String node;

    /** Request {@code requestId} failed at stage {@code stage} on node {@code node} with {@code cause}. */
    public StageFailedException(long requestId, int stage, String node, Throwable cause) {
        super("request " + requestId + " failed: stage " + stage + " on node " + node + " failed: " + cause.getMessage(), cause);
        this.stage = stage;
        this.node = node;
    }

    /** The stage whose work failed first. */
    public int stage() {
        return stage;
    }

    /** The address of the node that hosts that stage. */
    public String node() {
        return node;
    }
}
