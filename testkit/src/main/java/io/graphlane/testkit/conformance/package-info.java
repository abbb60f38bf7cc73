/**
 * The backend conformance suite: {@link io.graphlane.testkit.conformance.SubmissionConformanceSuite}
 * holds the laws of {@code CONTRACTS.md} for {@code Completion} and {@code SubmissionBackend}, one
 * named JUnit test per law, and every backend's test module extends it.
 *
 * <p>A backend supplies only a factory of backends (devices) and its
 * {@link io.graphlane.testkit.conformance.ConformanceWork}: no-op, failing, marker and gated work, all
 * of which a GPU can build (a host function; a host-written flag the stream waits on).
 *
 * <p>Guarantees: no test orders events by sleeping; every wait has a deadline, so a broken backend
 * fails a named test instead of hanging the build; every gate is opened and every backend shut down
 * after each test. Refuses: nothing; it is a test base class.
 */
package io.graphlane.testkit.conformance;
