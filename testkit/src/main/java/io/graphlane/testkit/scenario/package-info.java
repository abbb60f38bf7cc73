/**
 * Scenario helpers for tests of code built on graphlane's lanes, on Pekko's {@code ActorTestKit}.
 *
 * <p>Owns {@link io.graphlane.testkit.scenario.LaneScenario}: lanes over a backend (the simulated one by default) with
 * a retention ledger, whole graphs run through {@link io.graphlane.scheduler.graph.GraphRunner} (the production path:
 * windows, request lifecycle, deadlines, poisoning), every node's outcome collected, manual device time driven for the
 * test, and one assertion that the ledger is clean and the lanes hold nothing.
 *
 * <p>Guarantees that every wait is bounded ({@link io.graphlane.testkit.scenario.LaneScenario#TIMEOUT}) and fails the
 * test instead of hanging, and that a wait on manual device time that only the test could advance fails at once,
 * naming the cause.
 */
package io.graphlane.testkit.scenario;
