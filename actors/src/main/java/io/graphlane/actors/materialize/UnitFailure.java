package io.graphlane.actors.materialize;

import java.util.Objects;

/**
 * One cause of a unit's failure.
 *
 * @param parameter the parameter concerned, or the unit's name for a cause that concerns the whole unit
 * @param phase     where it failed
 * @param cause     the error, naming what was expected and found
 */
public record UnitFailure(String parameter, Phase phase, Throwable cause) {

    /** Where in a unit's life a cause arose. */
    public enum Phase {
        /** The request itself was refused (empty, duplicate names, overload, supervisor stopping). */
        ADMISSION,
        /** Starting the materialization failed (the loading lane refused it, a recipe could not lease its sources). */
        START,
        /** The realization's completion failed (bad tensor bytes, a failed lane). */
        REALIZATION,
        /** The weight does not fit its parameter. */
        VALIDATION,
        /** The unit's worker crashed (a backend broke its contract); the supervisor cleaned up after it. */
        CRASH,
        /** The unit did not finish within the supervisor's unit timeout; its leases are released as its materializations complete. */
        TIMEOUT
    }

    public UnitFailure {
        Objects.requireNonNull(parameter, "parameter");
        Objects.requireNonNull(phase, "phase");
        Objects.requireNonNull(cause, "cause");
    }

    @Override
    public String toString() {
        return parameter + " (" + phase + "): " + cause.getMessage();
    }
}
