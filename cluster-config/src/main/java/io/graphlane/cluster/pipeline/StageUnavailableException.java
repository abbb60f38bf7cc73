package io.graphlane.cluster.pipeline;

import io.graphlane.core.GraphlaneException;

/**
 * A stage host refused a step because its stage cannot run now: a tensor-parallel stage that lost a shard, or that is
 * re-forming its collective group. The serving node takes it as the stage having no host until the stage is listed
 * again, not as a failure of the step's requests.
 */
public final class StageUnavailableException extends GraphlaneException {
    private static final long serialVersionUID = 1L;

    /** Stage {@code stage} cannot run now, for {@code why}. */
    public StageUnavailableException(int stage, String why) {
        super("stage " + stage + " cannot run now: " + why);
    }
}
