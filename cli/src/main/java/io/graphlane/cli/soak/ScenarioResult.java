package io.graphlane.cli.soak;

import java.util.List;

/**
 * What the checks found in one scenario.
 *
 * @param seed the scenario's seed: {@code graphlane soak --scenarios 1 --seed SEED} replays it
 * @param kind which workload it ran ({@code graph} or {@code pipeline})
 * @param leaks values or leases never released (or leaked without an unproven completion)
 * @param earlyReleases releases before the exact completion, released more than once, or freed although unproven
 * @param hang whether it did not end within its budget
 * @param problems one line per broken law
 * @param notes what happened in the scenario (faults fired, how its runs ended), to read with the problems
 */
public record ScenarioResult(long seed, String kind, int leaks, int earlyReleases, boolean hang, List<String> problems, List<String> notes) {

    /** Whether any law was broken. */
    public boolean failed() {
        return !problems.isEmpty();
    }
}
