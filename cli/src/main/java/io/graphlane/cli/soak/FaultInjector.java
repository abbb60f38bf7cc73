package io.graphlane.cli.soak;

/**
 * Extra faults a caller adds to every scenario, after its own plan is made and before it is driven
 * (tests use it to prove that the checks catch a leak, an early release and a hang).
 */
@FunctionalInterface
public interface FaultInjector {
    /** No extra faults. */
    FaultInjector NONE = run -> { };

    /** Adds faults to {@code run} (through its triggers, device, ledger, or {@link ScenarioRun#mustEnd}). */
    void inject(ScenarioRun run);
}
