/**
 * The four narrow contracts an execution backend implements: {@link io.graphlane.core.backend.SubmissionBackend}
 * (lanes, submissions, ordering, retention), {@link io.graphlane.core.backend.ParameterBackend}
 * (checkpoint data to bound parameters), {@link io.graphlane.core.backend.TransferBackend}
 * (host/device residency) and {@link io.graphlane.core.backend.CollectiveBackend} (groups).
 *
 * <p>{@link io.graphlane.core.backend.AbstractSubmissionBackend} holds the executor bookkeeping that
 * every submission backend shares (ownership checks, lane naming, fork and shutdown), so a backend
 * says only how its executors are created, enqueue, wait and close.
 *
 * <p>Backends never import Pekko: the actors above them own serialization and messages. Every
 * method states its guarantee; {@code CONTRACTS.md} is the law and the conformance suite in
 * {@code graphlane-testkit} the proof.
 */
package io.graphlane.core.backend;
