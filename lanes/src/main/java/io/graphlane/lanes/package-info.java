/**
 * The lane runtime as a library: {@link io.graphlane.lanes.Lanes}, one {@code AutoCloseable} runtime that owns an actor
 * system, a CPU backend and its lanes, and {@link io.graphlane.lanes.LaneFlow}, a lane graph over those lanes whose
 * works return values to the nodes that run after them.
 *
 * <p>Owns: nothing of its own beyond the runtime's objects; it is a layer over
 * {@link io.graphlane.actors.lane.LaneGroup}, {@link io.graphlane.scheduler.graph.GraphRunner} and
 * {@link io.graphlane.backend.cpu.CpuBackend}.
 *
 * <p>Guarantees: a node runs only after every node it names; a producer's writes happen-before its consumers' reads on
 * any lane; a retained value is released exactly once, after its node's exact completion (at once if the node never
 * runs); every failure names the user's node and lane; {@code close()} stops everything it created within a bounded
 * wait.
 */
package io.graphlane.lanes;
