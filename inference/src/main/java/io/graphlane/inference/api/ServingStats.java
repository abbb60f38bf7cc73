package io.graphlane.inference.api;

import java.util.List;
import java.util.Objects;

/**
 * What a {@link TextGenerator} is doing now, for metrics: a snapshot built from counters the engine
 * publishes as it works, so taking one never waits for the engine. Each value is current on its own;
 * two values may be a moment apart.
 *
 * @param runningRequests requests generating now (holding an active slot)
 * @param waitingRequests admitted requests waiting for an active slot
 * @param stages the pipeline stages this process runs, in order (empty when they run elsewhere)
 * @param lanes the lanes this process runs the stages on, in order (empty when they run elsewhere)
 */
public record ServingStats(int runningRequests, int waitingRequests, List<Stage> stages, List<Lane> lanes) {

    /**
     * One pipeline stage.
     *
     * @param name the stage's name ({@code stage-0}, …)
     * @param busyNanos the time the stage's work has run on its lane since the model started
     * @param kvCachePositions positions the stage holds in its KV caches now, over every request
     */
    public record Stage(String name, long busyNanos, long kvCachePositions) {
        public Stage {
            Objects.requireNonNull(name, "name");
        }
    }

    /**
     * One lane.
     *
     * @param name the lane's name
     * @param queued submissions accepted by the lane and not yet handed to its executor
     * @param inFlight submissions running on the executor (or queued on the device) whose end has not been seen yet
     */
    public record Lane(String name, int queued, int inFlight) {
        public Lane {
            Objects.requireNonNull(name, "name");
        }

        /** Everything the lane holds: queued plus in flight. */
        public int depth() {
            return queued + inFlight;
        }
    }

    public ServingStats {
        stages = List.copyOf(stages);
        lanes = List.copyOf(lanes);
    }

    /** Only request counts: for a generator whose stages run elsewhere. */
    public static ServingStats requests(int running, int waiting) {
        return new ServingStats(running, waiting, List.of(), List.of());
    }
}
