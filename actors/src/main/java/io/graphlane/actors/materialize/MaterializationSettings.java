package io.graphlane.actors.materialize;

import com.typesafe.config.Config;

/**
 * Bounds of a {@link MaterializationSupervisor}.
 *
 * @param maxActiveUnits units materializing at once ({@code graphlane.materialization.max-active-units})
 * @param maxQueuedUnits units waiting for an active slot; beyond them a unit is refused at once
 *                       ({@code graphlane.materialization.max-queued-units})
 */
public record MaterializationSettings(int maxActiveUnits, int maxQueuedUnits) {

    /** Four active units and 64 waiting. */
    public static final MaterializationSettings DEFAULTS = new MaterializationSettings(4, 64);

    public MaterializationSettings {
        if (maxActiveUnits < 1) {
            throw new IllegalArgumentException("graphlane.materialization.max-active-units must be at least 1, found " + maxActiveUnits);
        }
        if (maxQueuedUnits < 0) {
            throw new IllegalArgumentException("graphlane.materialization.max-queued-units must be at least 0, found " + maxQueuedUnits);
        }
    }

    /** Reads {@code graphlane.materialization.*} from {@code config}, taking {@link #DEFAULTS} for keys that are absent. */
    public static MaterializationSettings fromConfig(Config config) {
        String prefix = "graphlane.materialization.";
        int active = config.hasPath(prefix + "max-active-units") ? config.getInt(prefix + "max-active-units") : DEFAULTS.maxActiveUnits;
        int queued = config.hasPath(prefix + "max-queued-units") ? config.getInt(prefix + "max-queued-units") : DEFAULTS.maxQueuedUnits;
        return new MaterializationSettings(active, queued);
    }
}
