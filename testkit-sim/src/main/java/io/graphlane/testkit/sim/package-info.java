/**
 * The simulated device: {@link io.graphlane.testkit.sim.SimBackend}, a
 * {@link io.graphlane.core.backend.SubmissionBackend} whose work occupies lanes for spans of
 * simulated device time without burning a CPU core.
 *
 * <p>Owns: simulated lanes ({@link io.graphlane.testkit.sim.SimExecutor}), their exact completions
 * ({@link io.graphlane.testkit.sim.SimCompletion}), the kinds of simulated work
 * ({@link io.graphlane.testkit.sim.SimWork}: instant, lasting, failing, held, calling, calling then lasting), a timeline
 * of every start and end ({@link io.graphlane.testkit.sim.SimEvent}), and its transfer backend
 * ({@link io.graphlane.testkit.sim.SimTransferBackend}: copies of settable time between
 * {@link io.graphlane.testkit.sim.SimHostBuffer}s and {@link io.graphlane.testkit.sim.SimWeight}s, device bytes taken in
 * lane order, copies that fail or hold their lane on request).
 *
 * <p>Guarantees: every law of the submission contract (the conformance suite runs on it, with and
 * without reordering); one device thread per backend in wall-clock mode and none in manual mode, never
 * a thread per item nor a busy loop; with manual time and a seed, the same calls give the same
 * timeline; work due back to back on a lane is scheduled from when the previous item was due, so
 * timer slack delays notifications but never accumulates in device time.
 *
 * <p>Refuses: ordering across two simulated devices, calls on a shut-down lane, any state-changing call
 * after {@link io.graphlane.testkit.sim.SimBackend#loseDevice}, manual time steps on a wall-clock device
 * and driving manual time from inside the device (a completion callback or a calling action).
 */
package io.graphlane.testkit.sim;
