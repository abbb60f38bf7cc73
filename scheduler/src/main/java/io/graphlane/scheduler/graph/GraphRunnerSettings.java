package io.graphlane.scheduler.graph;

import com.typesafe.config.Config;

/**
 * The explicit, positive limits of a {@link GraphRunner}, read from {@code graphlane.scheduler.graph}.
 *
 * @param maxActiveRequests most graph runs active at once on one runner
 * @param maxNodesPerRequest most nodes one graph run may hold (its queued work)
 * @param maxInFlightPerLane most nodes of one run sent to one lane and not yet ended
 * @param dispatcher the dispatcher config path run actors use; empty for the actor system's default
 */
public record GraphRunnerSettings(int maxActiveRequests, int maxNodesPerRequest, int maxInFlightPerLane, String dispatcher) {
    public GraphRunnerSettings {
        positive("max-active-requests", maxActiveRequests);
        positive("max-nodes-per-request", maxNodesPerRequest);
        positive("max-in-flight-per-lane", maxInFlightPerLane);
        dispatcher = dispatcher == null ? "" : dispatcher;
    }

    /** These limits on the actor system's default dispatcher. */
    public GraphRunnerSettings(int maxActiveRequests, int maxNodesPerRequest, int maxInFlightPerLane) {
        this(maxActiveRequests, maxNodesPerRequest, maxInFlightPerLane, "");
    }

    /** Reads {@code graphlane.scheduler.graph} from {@code config}. */
    public static GraphRunnerSettings fromConfig(Config config) {
        Config c = config.getConfig("graphlane.scheduler.graph");
        return new GraphRunnerSettings(c.getInt("max-active-requests"), c.getInt("max-nodes-per-request"),
                c.getInt("max-in-flight-per-lane"), c.getString("dispatcher"));
    }

    /** The same limits with another per-lane in-flight window. */
    public GraphRunnerSettings withMaxInFlightPerLane(int n) {
        return new GraphRunnerSettings(maxActiveRequests, maxNodesPerRequest, n, dispatcher);
    }

    private static void positive(String key, int value) {
        if (value <= 0) {
            throw new IllegalArgumentException("graphlane.scheduler.graph." + key + " must be > 0, got " + value);
        }
    }
}
