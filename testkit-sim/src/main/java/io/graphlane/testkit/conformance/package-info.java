/**
 * The backend conformance suite: abstract JUnit classes that hold the laws of {@code CONTRACTS.md}, one
 * named test per law, and that every backend's test module extends:
 * <ul>
 *   <li>{@link io.graphlane.testkit.conformance.SubmissionConformanceSuite}: {@code Completion} and
 *       {@code SubmissionBackend};</li>
 *   <li>{@link io.graphlane.testkit.conformance.CollectiveConformanceSuite}: {@code CollectiveBackend};</li>
 *   <li>{@link io.graphlane.testkit.conformance.ParameterConformanceSuite}: {@code ParameterBackend} (values
 *       F32 as is and F16/BF16 widened, every lease released exactly once and never before its realization's
 *       exact completion, also on failure and for every source of a recipe; sharing with no copy;
 *       {@code validateBind} errors, no side effect, and a {@code bind} that cannot fail after it);</li>
 *   <li>{@link io.graphlane.testkit.conformance.TransferConformanceSuite}: {@code TransferBackend} (values
 *       round-trip, a copy completes exactly with itself, source and destination retained until then, a failed
 *       demotion keeps the device copy).</li>
 * </ul>
 *
 * <p>A backend supplies only factories (a backend on a device, lanes) and the few native operations a law
 * needs: its {@link io.graphlane.testkit.conformance.ConformanceWork} (no-op, failing, marker and gated
 * work, all of which a GPU can build: a host function; a host-written flag the stream waits on), how to
 * read a tensor on the host, whether storage was freed. Checkpoint data is the suite's own:
 * {@link io.graphlane.testkit.ledger.LedgerLease}s whose releases a ledger checks against completions.
 *
 * <p>Guarantees: no test orders events by sleeping; every wait has a deadline, so a broken backend
 * fails a named test instead of hanging the build; every gate is opened and every backend shut down
 * after each test. Refuses: nothing; it is a test base class.
 */
package io.graphlane.testkit.conformance;
