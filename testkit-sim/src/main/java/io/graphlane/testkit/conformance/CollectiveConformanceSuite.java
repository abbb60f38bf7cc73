package io.graphlane.testkit.conformance;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.graphlane.core.backend.AbsentCapabilityException;
import io.graphlane.core.backend.CollectiveBackend;
import io.graphlane.core.backend.CollectiveBackend.Result;
import io.graphlane.core.backend.SubmissionBackend;
import io.graphlane.core.completion.Completion;
import io.graphlane.core.completion.Outcome;
import io.graphlane.testkit.conformance.ConformanceWork.Gate;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The collective laws of {@code CONTRACTS.md} (CollectiveBackend), one named test per law, for
 * any backend. A backend's test extends this class and says how to make a backend, its
 * collectives, a group over some of its lanes, and tensors from host values; nothing else. Events
 * are ordered by gates and completions, never by sleeping; every wait has a deadline, so a broken
 * backend fails a test instead of hanging it.
 *
 * <p>Members of a group are lanes of one backend; each member's collectives are called on its own
 * lane in the same order, as the contract requires. A backend that lacks an optional capability
 * (variable all-to-all counts) reports {@link AbsentCapabilityException}, and the tests that need
 * it are skipped rather than failed.
 *
 * @param <E> the backend's executor
 * @param <C> the backend's completion
 * @param <W> the backend's work item
 * @param <T> the backend's tensor
 * @param <G> the backend's group
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
public abstract class CollectiveConformanceSuite<E, C extends Completion, W, T, G> {

    /** How long a call that must not wait may take before the suite calls it blocking. */
    private static final Duration PROMPT = Duration.ofSeconds(5);

    private final List<SubmissionBackend<E, C, W>> backends = new ArrayList<>();
    private final List<Gate<W>> gates = new CopyOnWriteArrayList<>();
    private final Set<T> owned = Collections.newSetFromMap(new IdentityHashMap<>());
    private SubmissionBackend<E, C, W> backend;
    private CollectiveBackend<E, T, G> collectives;
    private ConformanceWork<W> work;

    /** A new, independent backend (one device) for one test; the suite shuts it down after the test. */
    protected abstract SubmissionBackend<E, C, W> createBackend();

    /** The collectives of {@code backend}. */
    protected abstract CollectiveBackend<E, T, G> collectivesFor(SubmissionBackend<E, C, W> backend);

    /** The conformance work for {@code backend} (gates and markers, as in {@link SubmissionConformanceSuite}). */
    protected abstract ConformanceWork<W> workFor(SubmissionBackend<E, C, W> backend);

    /** A group whose member i is {@code members.get(i)}, failing a member that sends nothing for {@code memberTimeout}. */
    protected abstract G group(SubmissionBackend<E, C, W> backend, List<E> members, Duration memberTimeout);

    /** A {@code rows × cols} tensor holding {@code values} (row-major), usable by work later submitted on {@code lane}. */
    protected abstract T tensor(E lane, float[] values, int rows, int cols);

    /** The values of {@code tensor}, row-major, read on the host after the work that made it completed. */
    protected abstract float[] read(T tensor);

    /** The rows of {@code tensor}. */
    protected abstract int rows(T tensor);

    /** Frees a tensor made by {@link #tensor} or returned by a collective. */
    protected abstract void release(T tensor);

    /** Makes the member on {@code lane} leave {@code group} as a lost member would (its work failed with {@code cause}). */
    protected abstract Completion leave(G group, E lane, RuntimeException cause);

    /**
     * A call of a collective this backend lacks (such as a reduction it does not compute) with
     * {@code value} on member {@code lane}, or empty if the backend lacks none.
     */
    protected abstract Optional<Runnable> unsupportedCollective(G group, E lane, T value);

    /** How long the suite waits for work that must end before it calls the backend hung. */
    protected Duration timeout() {
        return Duration.ofSeconds(20);
    }

    /** The member timeout of groups in tests that do not wait for it; long, so that only a real failure ends them. */
    protected Duration patientMemberTimeout() {
        return Duration.ofSeconds(60);
    }

    /** The member timeout of the test in which a member never arrives; short, so the test is quick. */
    protected Duration absentMemberTimeout() {
        return Duration.ofMillis(300);
    }

    @BeforeEach
    final void startBackend() {
        backend = createBackend();
        backends.add(backend);
        collectives = collectivesFor(backend);
        work = workFor(backend);
    }

    @AfterEach
    final void stopBackends() {
        gates.forEach(Gate::open);
        for (SubmissionBackend<E, C, W> b : backends) {
            awaitOutcome(b.shutdown());
        }
        owned.forEach(this::release);
        owned.clear();
    }

    // ---------------------------------------------------------------- all-reduce

    /** All-reduce sums exactly, for 1..4 members and odd sizes (fewer elements than members included). */
    @ParameterizedTest(name = "{0} member(s)")
    @ValueSource(ints = {1, 2, 3, 4})
    public void allReduceSumsOddSizesForOneToFourMembers(int members) {
        int[][] shapes = {{1, 1}, {1, 3}, {3, 5}, {7, 13}, {33, 1001}};
        List<E> lanes = lanes(members);
        G group = group(backend, lanes, patientMemberTimeout());
        for (int[] shape : shapes) {
            int rows = shape[0];
            int cols = shape[1];
            List<Result<T>> results = new ArrayList<>();
            for (int m = 0; m < members; m++) {
                int member = m;
                T value = input(lanes.get(m), rows, cols, i -> memberValue(member, i));
                results.add(collectives.allReduce(value, group, lanes.get(m)));
            }
            float[] expected = new float[rows * cols];
            for (int i = 0; i < expected.length; i++) {
                for (int m = 0; m < members; m++) {
                    expected[i] += memberValue(m, i);
                }
            }
            for (int m = 0; m < members; m++) {
                assertArrayEquals(expected, resultOf(results.get(m)), "member " + m + " of " + members + ", shape " + rows + " x " + cols);
            }
        }
    }

    /** Successive collectives on one group run in call order and each gives its own exact result. */
    @Test
    public void successiveCollectivesKeepTheirOrder() {
        List<E> lanes = lanes(3);
        G group = group(backend, lanes, patientMemberTimeout());
        List<List<Result<T>>> rounds = new ArrayList<>();
        for (int round = 0; round < 6; round++) {
            List<Result<T>> results = new ArrayList<>();
            for (int m = 0; m < 3; m++) {
                int base = round * 100 + m;
                results.add(collectives.allReduce(input(lanes.get(m), 2, 3, i -> base + i), group, lanes.get(m)));
            }
            rounds.add(results);
        }
        for (int round = 0; round < rounds.size(); round++) {
            float[] expected = new float[6];
            for (int i = 0; i < 6; i++) {
                expected[i] = 3 * (round * 100 + i) + 0 + 1 + 2;
            }
            for (int m = 0; m < 3; m++) {
                assertArrayEquals(expected, resultOf(rounds.get(round).get(m)), "round " + round + ", member " + m);
            }
        }
    }

    // ---------------------------------------------------------------- readiness

    /** A collective is lane work: the call returns at once, it waits behind earlier work on its lane, and later work waits for it. */
    @Test
    public void readinessIsACompletionOnTheCallingLane() {
        List<E> lanes = lanes(2);
        G group = group(backend, lanes, patientMemberTimeout());
        Gate<W> gate = gate("before-collective");
        T a = input(lanes.get(0), 1, 3, i -> i);
        T b = input(lanes.get(1), 1, 3, i -> 10 * i);
        C head = backend.submit(lanes.get(0), gate.work());
        List<Result<T>> results = assertTimeoutPreemptively(PROMPT,
                () -> List.of(collectives.allReduce(a, group, lanes.get(0)), collectives.allReduce(b, group, lanes.get(1))),
                "a collective call waited for its members");
        List<String> order = new CopyOnWriteArrayList<>();
        C after = backend.submit(lanes.get(0), work.marker(() -> order.add(results.get(0).completion().isDone() ? "after" : "too early")));
        assertFalse(head.isDone());
        assertFalse(results.get(0).completion().isDone(), "the collective ended before the work in front of it on its lane");
        assertFalse(results.get(1).completion().isDone(), "member 1 ended its all-reduce before member 0 took part");
        gate.open();
        assertArrayEquals(new float[] {0, 11, 22}, resultOf(results.get(0)));
        assertArrayEquals(new float[] {0, 11, 22}, resultOf(results.get(1)));
        assertSucceeded(after);
        assertEquals(List.of("after"), order);
    }

    // ---------------------------------------------------------------- all-gather

    /** All-gather concatenates every member's rows in member order, for 1..4 members and odd sizes. */
    @ParameterizedTest(name = "{0} member(s)")
    @ValueSource(ints = {1, 2, 3, 4})
    public void allGatherConcatenatesInMemberOrder(int members) {
        List<E> lanes = lanes(members);
        G group = group(backend, lanes, patientMemberTimeout());
        int rows = 3;
        int cols = 7;
        List<Result<T>> results = new ArrayList<>();
        for (int m = 0; m < members; m++) {
            int member = m;
            results.add(collectives.allGather(input(lanes.get(m), rows, cols, i -> memberValue(member, i)), group, lanes.get(m)));
        }
        float[] expected = new float[members * rows * cols];
        for (int m = 0; m < members; m++) {
            for (int i = 0; i < rows * cols; i++) {
                expected[m * rows * cols + i] = memberValue(m, i);
            }
        }
        for (int m = 0; m < members; m++) {
            assertArrayEquals(expected, resultOf(results.get(m)), "member " + m + " of " + members);
        }
    }

    // ---------------------------------------------------------------- all-to-all

    /** All-to-all with equal blocks: member j receives block j of every member, in member order. */
    @ParameterizedTest(name = "{0} member(s)")
    @ValueSource(ints = {1, 2, 3, 4})
    public void allToAllDeliversBlockJToMemberJ(int members) {
        List<E> lanes = lanes(members);
        G group = group(backend, lanes, patientMemberTimeout());
        int cols = 5;
        int rows = 2 * members;
        List<Result<T>> results = new ArrayList<>();
        for (int m = 0; m < members; m++) {
            int member = m;
            results.add(collectives.allToAll(input(lanes.get(m), rows, cols, i -> memberValue(member, i)), group, lanes.get(m)));
        }
        int block = 2 * cols;
        for (int j = 0; j < members; j++) {
            float[] expected = new float[members * block];
            for (int m = 0; m < members; m++) {
                for (int i = 0; i < block; i++) {
                    expected[m * block + i] = memberValue(m, j * block + i);
                }
            }
            assertArrayEquals(expected, resultOf(results.get(j)), "member " + j + " of " + members);
        }
    }

    /** All-to-all with variable counts: a member with zero rows still takes part and receives what the others send it. */
    @Test
    public void allToAllWithAZeroRowMember() {
        int members = 3;
        List<E> lanes = lanes(members);
        G group = group(backend, lanes, patientMemberTimeout());
        int cols = 3;
        // counts[m][j]: rows member m sends to member j; member 1 sends nothing at all.
        int[][] counts = {{1, 2, 0}, {0, 0, 0}, {3, 1, 1}};
        List<Result<T>> results = new ArrayList<>();
        for (int m = 0; m < members; m++) {
            int member = m;
            int rows = counts[m][0] + counts[m][1] + counts[m][2];
            T value = input(lanes.get(m), rows, cols, i -> memberValue(member, i));
            try {
                results.add(collectives.allToAll(value, counts[m], group, lanes.get(m)));
            } catch (AbsentCapabilityException absent) {
                Assumptions.assumeTrue(m == 0, "a backend must lack variable counts on every member alike");
                Assumptions.abort("backend lacks variable all-to-all counts: " + absent.getMessage());
            }
        }
        for (int j = 0; j < members; j++) {
            List<Float> expected = new ArrayList<>();
            for (int m = 0; m < members; m++) {
                int firstRow = 0;
                for (int k = 0; k < j; k++) {
                    firstRow += counts[m][k];
                }
                for (int i = firstRow * cols; i < (firstRow + counts[m][j]) * cols; i++) {
                    expected.add(memberValue(m, i));
                }
            }
            float[] want = new float[expected.size()];
            for (int i = 0; i < want.length; i++) {
                want[i] = expected.get(i);
            }
            assertArrayEquals(want, resultOf(results.get(j)), "member " + j);
        }
        assertEquals(counts[0][1] + counts[2][1], rows(results.get(1).value()), "rows member 1 received");
    }

    // ---------------------------------------------------------------- consensus and failure

    /** Members that announce different shapes all fail, each naming the first member that differs from member 0. */
    @Test
    public void shapeMismatchFailsEveryMemberNamingTheFirstThatDiffers() {
        List<E> lanes = lanes(4);
        G group = group(backend, lanes, patientMemberTimeout());
        int[] rows = {2, 2, 3, 4};
        List<Result<T>> results = new ArrayList<>();
        for (int m = 0; m < 4; m++) {
            results.add(collectives.allReduce(input(lanes.get(m), rows[m], 3, i -> i), group, lanes.get(m)));
        }
        for (int m = 0; m < 4; m++) {
            assertFailsNaming(results.get(m).completion(), 2, "member " + m);
        }
    }

    /** Members that call different operations all fail, each naming the first member that differs. */
    @Test
    public void operationMismatchFailsEveryMemberNamingTheFirstThatDiffers() {
        List<E> lanes = lanes(3);
        G group = group(backend, lanes, patientMemberTimeout());
        List<Result<T>> results = new ArrayList<>();
        results.add(collectives.allReduce(input(lanes.get(0), 2, 3, i -> i), group, lanes.get(0)));
        results.add(collectives.allGather(input(lanes.get(1), 2, 3, i -> i), group, lanes.get(1)));
        results.add(collectives.allReduce(input(lanes.get(2), 2, 3, i -> i), group, lanes.get(2)));
        for (int m = 0; m < 3; m++) {
            assertFailsNaming(results.get(m).completion(), 1, "member " + m);
        }
    }

    /** A member that never arrives fails the others after the group's timeout, with an error naming it. */
    @Test
    public void absentMemberFailsTheOthersNamingIt() {
        List<E> lanes = lanes(3);
        G group = group(backend, lanes, absentMemberTimeout());
        Result<T> first = collectives.allReduce(input(lanes.get(0), 3, 3, i -> i), group, lanes.get(0));
        Result<T> last = collectives.allReduce(input(lanes.get(2), 3, 3, i -> i), group, lanes.get(2));
        assertFailsNaming(first.completion(), 1, "member 0");
        assertFailsNaming(last.completion(), 1, "member 2");
    }

    /** A member that leaves while the others wait in a collective fails them promptly (long before the timeout), naming it. */
    @Test
    public void memberLossFailsTheOthersNamingIt() {
        List<E> lanes = lanes(3);
        G group = group(backend, lanes, patientMemberTimeout());
        Result<T> a = collectives.allReduce(input(lanes.get(0), 4, 5, i -> i), group, lanes.get(0));
        Result<T> b = collectives.allReduce(input(lanes.get(1), 4, 5, i -> i), group, lanes.get(1));
        leave(group, lanes.get(2), new IllegalStateException("node of member 2 went away"));
        assertFailsNaming(a.completion(), 2, "member 0");
        assertFailsNaming(b.completion(), 2, "member 1");
    }

    /** After a failed collective the group is poisoned: later collectives fail with a clear cause instead of hanging or mixing. */
    @Test
    public void aFailedGroupRefusesLaterCollectives() {
        List<E> lanes = lanes(2);
        G group = group(backend, lanes, patientMemberTimeout());
        Result<T> a = collectives.allReduce(input(lanes.get(0), 1, 2, i -> i), group, lanes.get(0));
        Result<T> b = collectives.allReduce(input(lanes.get(1), 2, 2, i -> i), group, lanes.get(1));
        assertFailsNaming(a.completion(), 1, "member 0");
        assertFailsNaming(b.completion(), 1, "member 1");
        Result<T> again0 = collectives.allReduce(input(lanes.get(0), 1, 2, i -> i), group, lanes.get(0));
        Result<T> again1 = collectives.allReduce(input(lanes.get(1), 1, 2, i -> i), group, lanes.get(1));
        assertInstanceOf(Outcome.Failed.class, awaitOutcome(again0.completion()), "a collective on a poisoned group succeeded");
        assertInstanceOf(Outcome.Failed.class, awaitOutcome(again1.completion()), "a collective on a poisoned group succeeded");
    }

    /** An operation the backend lacks is refused with an absent-capability error before anything is queued; the group goes on. */
    @Test
    public void unsupportedOperationReportsAbsentCapability() {
        List<E> lanes = lanes(2);
        G group = group(backend, lanes, patientMemberTimeout());
        Optional<Runnable> unsupported = unsupportedCollective(group, lanes.get(0), input(lanes.get(0), 1, 2, i -> i));
        Assumptions.assumeTrue(unsupported.isPresent(), "the backend lacks no collective");
        assertThrows(AbsentCapabilityException.class, unsupported.get()::run);
        Result<T> a = collectives.allReduce(input(lanes.get(0), 1, 2, i -> i), group, lanes.get(0));
        Result<T> b = collectives.allReduce(input(lanes.get(1), 1, 2, i -> 2 * i), group, lanes.get(1));
        assertArrayEquals(new float[] {0, 3}, resultOf(a));
        assertArrayEquals(new float[] {0, 3}, resultOf(b));
    }

    // ---------------------------------------------------------------- helpers

    /** The collectives under test in the current test. */
    protected final CollectiveBackend<E, T, G> collectives() {
        return collectives;
    }

    /** Waits (with the suite's deadline) until {@code c} ends and returns its outcome. */
    protected final Outcome awaitOutcome(Completion c) {
        CompletableFuture<Outcome> ended = new CompletableFuture<>();
        c.whenDone(ended::complete);
        try {
            return ended.get(timeout().toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            return fail(c.label() + " did not end within " + timeout() + ": the collective hung");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return fail("interrupted while waiting for " + c.label());
        } catch (ExecutionException e) {
            return fail("waiting for " + c.label() + " failed", e.getCause());
        }
    }

    /** Asserts that {@code c} ends successfully within the deadline. */
    protected final void assertSucceeded(Completion c) {
        if (awaitOutcome(c) instanceof Outcome.Failed failed) {
            fail(c.label() + " failed: " + failed.cause(), failed.cause());
        }
    }

    private float[] resultOf(Result<T> result) {
        assertSucceeded(result.completion());
        T value = result.value();
        owned.add(value);
        return read(value);
    }

    private void assertFailsNaming(Completion c, int member, String who) {
        Outcome.Failed failed = assertInstanceOf(Outcome.Failed.class, awaitOutcome(c), who + " must fail");
        Pattern naming = Pattern.compile("\\bmember " + member + "\\b");
        for (Throwable t = failed.cause(); t != null; t = t.getCause()) {
            if (t.getMessage() != null && naming.matcher(t.getMessage()).find()) {
                return;
            }
        }
        fail(who + " failed without naming member " + member + ": " + failed.cause(), failed.cause());
    }

    private T input(E lane, int rows, int cols, ValueAt valueAt) {
        float[] values = new float[rows * cols];
        for (int i = 0; i < values.length; i++) {
            values[i] = valueAt.at(i);
        }
        T t = tensor(lane, values, rows, cols);
        owned.add(t);
        return t;
    }

    /** The value of element {@code i} of a test tensor. */
    @FunctionalInterface
    private interface ValueAt {
        float at(int i);
    }

    /** Distinct small integers per member and element: sums of them are exact in F32. */
    private static float memberValue(int member, int element) {
        return (member + 1) * 1000 + element % 997 - 300;
    }

    private List<E> lanes(int n) {
        return backend.forkExecutors(backend.rootExecutor(), n);
    }

    private Gate<W> gate(String name) {
        Gate<W> g = work.gate(name);
        gates.add(g);
        return g;
    }
}
