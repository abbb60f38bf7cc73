/**
 * Scenario helpers for tests of code built on graphlane's lanes, on Pekko's {@code ActorTestKit}.
 *
 * <p>Owns {@link io.graphlane.testkit.scenario.LaneScenario}: lanes over a backend (the simulated one
 * by default) with a retention ledger, whole graphs sent to the lanes at once, every node's outcome
 * collected by message, and one assertion that the ledger is clean and the lanes hold nothing.
 * Guarantees that every wait is bounded ({@link io.graphlane.testkit.scenario.LaneScenario#TIMEOUT}) and
 * fails the test instead of hanging. Refuses request lifecycles, windows and deadlines: those belong to
 * {@code io.graphlane.scheduler.graph.GraphRunner}, which testkit cannot depend on (the scheduler's own
 * tests depend on testkit).
 */
package io.graphlane.testkit.scenario;
