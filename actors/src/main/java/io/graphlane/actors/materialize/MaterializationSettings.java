package io.graphlane.actors.materialize;

import com.typesafe.config.Config;
import java.time.Duration;
import java.util.Objects;

/**
 * Bounds of a {@link MaterializationSupervisor}.
 *
 * @param maxActiveUnits units materializing at once ({@code graphlane.materialization.max-active-units})
 * @param maxQueuedUnits units waiting for an active slot; beyond them a unit is refused at once
 *                       ({@code graphlane.materialization.max-queued-units})
 * @param unitTimeout    how long an active unit may take before it is answered as failed (phase
 *                       {@link UnitFailure.Phase#TIMEOUT}); its leases are still held until each exact
 *                       completion ({@code graphlane.materialization.unit-timeout})
 */
public record MaterializationSettings(int maxActiveUnits, int maxQueuedUnits, Duration unitTimeout) {

    /** The unit timeout when none is given: one hour (a large stage read from slow storage takes minutes). */
    public static final Duration DEFAULT_UNIT_TIMEOUT = Duration.ofHours(1);

    /** Four active units, 64 waiting, a one-hour unit timeout. */
    public static final MaterializationSettings DEFAULTS = new MaterializationSettings(4, 64, DEFAULT_UNIT_TIMEOUT);

    public MaterializationSettings {
        if (maxActiveUnits < 1) {
            throw new IllegalArgumentException("graphlane.materialization.max-active-units must be at least 1, found " + maxActiveUnits);
        }
        if (maxQueuedUnits < 0) {
            throw new IllegalArgumentException("graphlane.materialization.max-queued-units must be at least 0, found " + maxQueuedUnits);
        }
        Objects.requireNonNull(unitTimeout, "unitTimeout");
        if (unitTimeout.isNegative() || unitTimeout.isZero()) {
            throw new IllegalArgumentException("graphlane.materialization.unit-timeout must be a positive duration, found " + unitTimeout);
        }
    }

    /** These bounds with the {@linkplain #DEFAULT_UNIT_TIMEOUT default unit timeout}. */
    public MaterializationSettings(int maxActiveUnits, int maxQueuedUnits) {
        this(maxActiveUnits, maxQueuedUnits, DEFAULT_UNIT_TIMEOUT);
    }

    /** These bounds with another unit timeout. */
    public MaterializationSettings withUnitTimeout(Duration timeout) {
        return new MaterializationSettings(maxActiveUnits, maxQueuedUnits, timeout);
    }

    /** Reads {@code graphlane.materialization.*} from {@code config}, taking {@link #DEFAULTS} for keys that are absent. */
    public static MaterializationSettings fromConfig(Config config) {
        String prefix = "graphlane.materialization.";
        int active = config.hasPath(prefix + "max-active-units") ? config.getInt(prefix + "max-active-units") : DEFAULTS.maxActiveUnits;
        int queued = config.hasPath(prefix + "max-queued-units") ? config.getInt(prefix + "max-queued-units") : DEFAULTS.maxQueuedUnits;
        Duration timeout = config.hasPath(prefix + "unit-timeout") ? config.getDuration(prefix + "unit-timeout") : DEFAULTS.unitTimeout;
        return new MaterializationSettings(active, queued, timeout);
    }
}
