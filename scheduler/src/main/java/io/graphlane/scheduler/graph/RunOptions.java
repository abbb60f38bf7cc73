package io.graphlane.scheduler.graph;

import io.graphlane.actors.lane.LaneProtocol;
import java.time.Duration;

/**
 * How one graph run is started.
 *
 * @param requestId the request id, or {@link LaneProtocol#NO_SCOPE} to have the registry allocate one
 * @param deadline how long after start nodes may still be submitted; null for no deadline
 */
public record RunOptions(long requestId, Duration deadline) {
    public RunOptions {
        if (requestId < 0) {
            throw new IllegalArgumentException("request id must be >= 0, got " + requestId);
        }
        if (deadline != null && deadline.isNegative()) {
            throw new IllegalArgumentException("deadline must not be negative, got " + deadline);
        }
    }

    /** An allocated request id and no deadline. */
    public static RunOptions defaults() {
        return new RunOptions(LaneProtocol.NO_SCOPE, null);
    }

    /** These options with request id {@code id} (refused if another active run of the runner has it). */
    public RunOptions withRequestId(long id) {
        return new RunOptions(id, deadline);
    }

    /** These options with a deadline {@code after} the start. */
    public RunOptions withDeadline(Duration after) {
        return new RunOptions(requestId, after);
    }
}
