package io.graphlane.scheduler.pipeline;

import io.graphlane.core.GraphlaneException;

/** A request refused at admission because the engine holds as many requests as its settings allow. */
public final class PipelineOverloadedException extends GraphlaneException {
    private static final long serialVersionUID = 1L;

    public PipelineOverloadedException(int held, int maxActive, int maxQueued) {
        super("pipeline is full: " + held + " requests held (max-active-requests " + maxActive + " + max-queued-requests "
                + maxQueued + "); retry later or raise graphlane.pipeline limits");
    }
}
