package io.graphlane.actors.lane;

import com.typesafe.config.Config;
import java.time.Duration;

/**
 * The bounds of one lane actor, read from {@code graphlane.lane} (see {@code reference.conf}).
 * Every count is positive: a lane never grows past {@code maxInFlight + maxQueued} accepted
 * submissions nor {@code maxPendingSubscriptions} subscriptions to handles it has not seen.
 *
 * @param maxInFlight most submissions handed to the executor and not yet completed
 * @param maxQueued most accepted submissions not yet handed to the executor
 * @param maxPendingSubscriptions most subscriptions held for handles the lane has not received yet
 * @param rememberedCancelledRequests how many cancelled request ids the lane remembers
 * @param dispatcher the dispatcher config path lane actors run on; empty for the actor system's default
 * @param stopTimeout how long {@link LaneGroup#stop()} waits for a lane to finish its in-flight work
 */
public record LaneSettings(int maxInFlight, int maxQueued, int maxPendingSubscriptions, int rememberedCancelledRequests,
                           String dispatcher, Duration stopTimeout) {

    public LaneSettings {
        positive("max-in-flight", maxInFlight);
        positive("max-queued", maxQueued);
        positive("max-pending-subscriptions", maxPendingSubscriptions);
        positive("remembered-cancelled-requests", rememberedCancelledRequests);
        if (dispatcher == null) {
            dispatcher = "";
        }
        if (stopTimeout == null || stopTimeout.isNegative() || stopTimeout.isZero()) {
            throw new IllegalArgumentException("graphlane.lane.stop-timeout must be a positive duration, got " + stopTimeout);
        }
    }

    /** Reads {@code graphlane.lane} from {@code config} (the actor system's configuration). */
    public static LaneSettings fromConfig(Config config) {
        Config c = config.getConfig("graphlane.lane");
        return new LaneSettings(c.getInt("max-in-flight"), c.getInt("max-queued"), c.getInt("max-pending-subscriptions"),
                c.getInt("remembered-cancelled-requests"), c.getString("dispatcher"), c.getDuration("stop-timeout"));
    }

    /** The same settings with other in-flight and queue bounds. */
    public LaneSettings withLimits(int newMaxInFlight, int newMaxQueued) {
        return new LaneSettings(newMaxInFlight, newMaxQueued, maxPendingSubscriptions, rememberedCancelledRequests, dispatcher,
                stopTimeout);
    }

    /** The same settings on another dispatcher (a config path, or empty for the default one). */
    public LaneSettings withDispatcher(String newDispatcher) {
        return new LaneSettings(maxInFlight, maxQueued, maxPendingSubscriptions, rememberedCancelledRequests, newDispatcher,
                stopTimeout);
    }

    private static void positive(String key, int value) {
        if (value <= 0) {
            throw new IllegalArgumentException("graphlane.lane." + key + " must be > 0, got " + value);
        }
    }
}
