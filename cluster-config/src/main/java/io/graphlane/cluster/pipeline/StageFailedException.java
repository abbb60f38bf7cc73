package io.graphlane.cluster.pipeline;

import io.graphlane.core.GraphlaneException;
import java.util.List;

/** A step failed because the work of one pipeline stage failed on some node; the cause is that work's failure. */
public final class StageFailedException extends GraphlaneException {
    private static final long serialVersionUID = 1L;

    private final int stage;
    private final String node;

    /** The step of requests {@code requestIds} failed at stage {@code stage} on node {@code node} with {@code cause}. */
    public StageFailedException(List<Long> requestIds, int stage, String node, Throwable cause) {
        super("requests " + requestIds + " failed: stage " + stage + " on node " + node + " failed: " + cause.getMessage(), cause);
        this.stage = stage;
        this.node = node;
    }

    /** The stage whose work failed. */
    public int stage() {
        return stage;
    }

    /** The address of the node that hosts that stage. */
    public String node() {
        return node;
    }
}
