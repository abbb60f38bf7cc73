package io.graphlane.testkit.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.graphlane.core.backend.CrossDeviceOrderingException;
import io.graphlane.core.backend.ExecutorClosedException;
import io.graphlane.core.backend.SubmissionBackend;
import io.graphlane.core.completion.Completion;
import io.graphlane.core.completion.CompletionFailedException;
import io.graphlane.core.completion.Outcome;
import io.graphlane.core.completion.PoisonedPreconditionException;
import io.graphlane.testkit.conformance.ConformanceWork.Gate;
import io.graphlane.testkit.ledger.RetentionLedger;
import java.lang.ref.WeakReference;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The laws of {@code CONTRACTS.md} for {@code Completion} and {@code SubmissionBackend}, one
 * named test per law, for any backend. A backend's test extends this class and says how to make
 * a backend (a device) and its {@link ConformanceWork}; nothing else. Events are ordered by gates,
 * markers and completions, never by sleeping; every wait has a deadline, so a broken backend fails
 * a test instead of hanging it.
 *
 * <p>The suite expects an executor's {@code toString()} to name it (errors must name the lane).
 *
 * @param <E> the backend's executor
 * @param <C> the backend's completion
 * @param <W> the backend's work item
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
public abstract class SubmissionConformanceSuite<E, C extends Completion, W> {

    /** How long a call that must not wait may take before the suite calls it blocking. */
    private static final Duration PROMPT = Duration.ofSeconds(5);

    /** How many fresh devices race a fork against shutdown. */
    private static final int RACE_ROUNDS = 50;

    private final List<SubmissionBackend<E, C, W>> backends = new ArrayList<>();
    private final List<Gate<W>> gates = new CopyOnWriteArrayList<>();
    private SubmissionBackend<E, C, W> backend;
    private ConformanceWork<W> work;
    private RetentionLedger ledger;

    /** A new, independent backend (one device) for one test; the suite shuts it down after the test. */
    protected abstract SubmissionBackend<E, C, W> createBackend();

    /** The conformance work for {@code backend}, a backend made by {@link #createBackend()}. */
    protected abstract ConformanceWork<W> workFor(SubmissionBackend<E, C, W> backend);

    /** How long the suite waits for work that must end before it calls the backend hung. */
    protected Duration timeout() {
        return Duration.ofSeconds(10);
    }

    @BeforeEach
    final void startBackend() {
        ledger = new RetentionLedger();
        backend = newBackend();
        work = workOf(backend);
    }

    @AfterEach
    final void stopBackends() throws Exception {
        for (Gate<W> gate : gates) {
            gate.open();
        }
        for (SubmissionBackend<E, C, W> b : backends) {
            Completion stopped = b.shutdown();
            assertEnds(stopped);
        }
    }

    // ---------------------------------------------------------------- Completion

    /** A completion covers exactly its own submission: not later work on its lane, not other lanes. */
    @Test
    public void completionCoversOnlyItsOwnWork() {
        List<E> lanes = lanes(2);
        Gate<W> gate = gate("later-work");
        C early = backend.submit(lanes.get(0), work.noop());
        C blocked = backend.submit(lanes.get(0), gate.work());
        C other = backend.submit(lanes.get(1), work.noop());

        assertSucceeded(early);
        assertSucceeded(other);
        assertFalse(blocked.isDone(), "waiting on " + early.label() + " and " + other.label() + " must not drain " + blocked.label());

        gate.open();
        assertSucceeded(blocked);
    }

    /** {@code isDone()} answers at once while the work is still running. */
    @Test
    public void isDoneNeverBlocks() {
        Gate<W> gate = gate("running");
        C running = backend.submit(lane(), gate.work());
        assertTimeoutPreemptively(PROMPT, () -> {
            for (int i = 0; i < 1_000; i++) {
                assertFalse(running.isDone(), running.label() + " reported done while its gate was closed");
                assertTrue(running.outcome().isEmpty(), "an outcome appeared before the work ended");
                assertTrue(running.failure().isEmpty(), "a failure appeared before the work ended");
            }
        }, "isDone() blocked");
        gate.open();
        assertSucceeded(running);
    }

    /** Once {@code isDone()} is true it stays true, and the outcome never disappears. */
    @Test
    public void isDoneIsMonotonic() throws Exception {
        Gate<W> gate = gate("flip");
        C c = backend.submit(lane(), gate.work());
        AtomicReference<String> violation = new AtomicReference<>();
        Thread watcher = new Thread(() -> {
            boolean seen = false;
            int readsAfter = 0;
            while (readsAfter < 20_000 && violation.get() == null) {
                boolean done = c.isDone();
                if (seen && (!done || c.outcome().isEmpty())) {
                    violation.set(c.label() + " went back to not done after being done");
                }
                seen |= done;
                if (seen) {
                    readsAfter++;
                }
            }
        }, "conformance-isDone-watcher");
        watcher.start();
        gate.open();
        assertSucceeded(c);
        watcher.join(timeout().toMillis());
        assertFalse(watcher.isAlive(), "the watcher never saw " + c.label() + " done");
        assertEquals(null, violation.get());
    }

    /** Many threads awaiting one completion all get the same outcome, and so does every later await. */
    @Test
    public void awaitFromManyThreadsGivesSameOutcome() throws Exception {
        E lane = lane();
        Gate<W> gate = gate("many-waiters");
        RuntimeException cause = new IllegalStateException("kernel 3 failed for the waiters");
        C ok = backend.submit(lane, gate.work());
        C bad = backend.submit(lane, work.failing(cause));

        int threads = 8;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            CountDownLatch waiting = new CountDownLatch(threads);
            List<Future<Outcome[]>> results = new ArrayList<>();
            for (int i = 0; i < threads; i++) {
                results.add(pool.submit(() -> {
                    waiting.countDown();
                    return new Outcome[] {ok.await(), bad.await()};
                }));
            }
            awaitLatch(waiting, "waiter threads to start");
            gate.open();
            Outcome firstBad = null;
            for (Future<Outcome[]> f : results) {
                Outcome[] got = f.get(timeout().toMillis(), TimeUnit.MILLISECONDS);
                assertTrue(got[0].isSuccess(), ok.label() + " gave " + got[0] + " to one waiter");
                Outcome.Failed failed = assertInstanceOf(Outcome.Failed.class, got[1]);
                if (firstBad == null) {
                    firstBad = failed;
                }
                assertSame(((Outcome.Failed) firstBad).cause(), failed.cause(), "two waiters saw different causes for " + bad.label());
            }
            for (int i = 0; i < 3; i++) {
                assertTrue(ok.await().isSuccess());
                assertSame(((Outcome.Failed) firstBad).cause(), ((Outcome.Failed) bad.await()).cause());
            }
        } finally {
            pool.shutdownNow();
        }
    }

    /** A failure stays attached for good: every query, wait, stage and later lane activity reports the same cause. */
    @Test
    public void failureIsStickyAndSameCause() throws Exception {
        E lane = lane();
        RuntimeException cause = new IllegalStateException("matmul 7 failed: NaN in row 3");
        C c = backend.submit(lane, work.failing(cause));
        Throwable recorded = assertInstanceOf(Outcome.Failed.class, awaitOutcome(c)).cause();
        assertCausedBy(recorded, cause);

        assertSucceeded(backend.submit(lane, work.noop()));
        for (int i = 0; i < 3; i++) {
            assertSame(recorded, ((Outcome.Failed) c.await()).cause());
            assertSame(recorded, c.failure().orElseThrow());
            assertSame(recorded, ((Outcome.Failed) c.outcome().orElseThrow()).cause());
            assertTrue(c.isDone());
        }
        CompletionFailedException thrown = assertThrows(CompletionFailedException.class, c::awaitSuccess);
        assertCausedBy(thrown, recorded);
        Throwable viaStage = c.toStage().toCompletableFuture().handle((v, t) -> t).get(timeout().toMillis(), TimeUnit.MILLISECONDS);
        assertSame(recorded, viaStage);
    }

    /** An outcome is recorded once: later work, on the same lane or others, never re-records it. */
    @Test
    public void outcomeNeverChangesOnceRecorded() {
        List<E> lanes = lanes(2);
        C ok = backend.submit(lanes.get(0), work.noop());
        C bad = backend.submit(lanes.get(1), work.failing(new IllegalArgumentException("bad shape [3, 4]")));
        Outcome okOutcome = awaitOutcome(ok);
        Outcome badOutcome = awaitOutcome(bad);
        for (int i = 0; i < 5; i++) {
            assertSucceeded(backend.submit(lanes.get(i % 2), work.noop()));
            backend.submit(lanes.get((i + 1) % 2), work.failing(new IllegalStateException("later failure " + i)));
        }
        assertSucceeded(backend.submit(lanes.get(0), work.noop()));
        assertSucceeded(backend.submit(lanes.get(1), work.noop()));
        assertSame(okOutcome, ok.outcome().orElseThrow());
        assertSame(((Outcome.Failed) badOutcome).cause(), bad.failure().orElseThrow());
    }

    /** A callback runs exactly once when the work ends, without anyone polling or waiting on the completion. */
    @Test
    public void callbackRunsOnceWithoutPolling() throws Exception {
        E lane = lane();
        Gate<W> gate = gate("callback");
        C c = backend.submit(lane, gate.work());
        AtomicInteger calls = new AtomicInteger();
        CountDownLatch called = new CountDownLatch(1);
        c.whenDone(outcome -> {
            calls.incrementAndGet();
            called.countDown();
        });
        CompletableFuture<Void> stage = c.toStage().toCompletableFuture();
        assertEquals(0, calls.get(), "the callback ran before the work ended");

        gate.open();
        awaitLatch(called, "the callback of " + c.label());
        stage.get(timeout().toMillis(), TimeUnit.MILLISECONDS);
        assertSucceeded(backend.submit(lane, work.noop()));
        assertEquals(1, calls.get(), "the callback of " + c.label() + " ran more than once");
    }

    /** A callback added after the end runs at once, on the calling thread, exactly once. */
    @Test
    public void callbackAfterEndRunsAtOnceOnCaller() {
        C c = backend.submit(lane(), work.noop());
        assertSucceeded(c);
        Thread caller = Thread.currentThread();
        List<Thread> ranOn = new CopyOnWriteArrayList<>();
        c.whenDone(outcome -> ranOn.add(Thread.currentThread()));
        assertEquals(List.of(caller), ranOn);
    }

    /** An empty submission is complete when it is returned, even behind running work. */
    @Test
    public void emptySubmissionIsAlreadyComplete() {
        E lane = lane();
        Gate<W> gate = gate("in-front");
        C running = backend.submit(lane, gate.work());
        C empty = backend.submit(lane, List.of());
        assertTrue(empty.isDone(), "an empty submission must return an already complete completion");
        assertTrue(empty.outcome().orElseThrow().isSuccess());
        assertFalse(running.isDone());
        gate.open();
        assertSucceeded(running);
    }

    /** Forgetting a completion neither cancels nor frees its work: the work still runs. */
    @Test
    public void droppingHandleDoesNotCancel() {
        E lane = lane();
        Gate<W> gate = gate("before-dropped");
        backend.submit(lane, gate.work());
        CountDownLatch ran = new CountDownLatch(1);
        submitAndForget(lane, work.marker(ran::countDown));
        System.gc();
        C after = backend.submit(lane, work.noop());
        gate.open();
        assertSucceeded(after);
        assertEquals(0, ran.getCount(), "work whose completion was dropped did not run");
    }

    // ---------------------------------------------------------------- SubmissionBackend: lanes

    /** Forked executors are distinct and independently schedulable: a held lane does not hold the others. */
    @Test
    public void forkedExecutorsRunIndependently() {
        List<E> lanes = lanes(3);
        assertEquals(3, lanes.size());
        Set<E> distinct = Collections.newSetFromMap(new IdentityHashMap<>());
        distinct.addAll(lanes);
        assertEquals(3, distinct.size(), "forkExecutors returned the same executor twice");
        assertTrue(backend.forkExecutors(backend.rootExecutor(), 0).isEmpty());

        Gate<W> gate = gate("lane-0-held");
        C held = backend.submit(lanes.get(0), gate.work());
        assertSucceeded(backend.submit(lanes.get(1), work.noop()));
        assertSucceeded(backend.submit(lanes.get(2), work.noop()));
        assertFalse(held.isDone());
        gate.open();
        assertSucceeded(held);
    }

    /**
     * Work on one lane runs in submission order, none before the gate in front of it opened, and (where the backend
     * settles each item before the next starts) each after the previous one was seen ended.
     */
    @Test
    public void laneRunsInSubmissionOrder() {
        E lane = lane();
        Gate<W> gate = gate("head");
        AtomicBoolean opened = new AtomicBoolean();
        boolean settledFirst = work.settlesBeforeSuccessorsStart();
        List<Integer> ran = new CopyOnWriteArrayList<>();
        List<String> violations = new CopyOnWriteArrayList<>();
        C previous = backend.submit(lane, gate.work());
        for (int i = 0; i < 50; i++) {
            int n = i;
            C before = previous;
            C c = backend.submit(lane, work.marker(() -> {
                ran.add(n);
                if (!opened.get()) {
                    violations.add("item " + n + " ran before the gate in front of it opened");
                }
                if (settledFirst && !before.isDone()) {
                    violations.add("item " + n + " ran before " + before.label() + " ended");
                }
            }));
            previous = c;
        }
        opened.set(true);
        gate.open();
        assertSucceeded(previous);
        assertEquals(IntStream.range(0, 50).boxed().toList(), ran);
        assertEquals(List.of(), violations);
    }

    /** Submitting returns at once, however much work is queued in front. */
    @Test
    public void submitNeverWaitsForWork() {
        E lane = lane();
        Gate<W> gate = gate("blocking-head");
        C head = backend.submit(lane, gate.work());
        List<C> queued = assertTimeoutPreemptively(PROMPT, () -> {
            List<C> cs = new ArrayList<>();
            for (int i = 0; i < 200; i++) {
                cs.add(backend.submit(lane, i % 2 == 0 ? work.noop() : gate.work()));
            }
            return cs;
        }, "submit waited for queued work");
        assertFalse(head.isDone());
        gate.open();
        for (C c : queued) {
            assertSucceeded(c);
        }
    }

    // ---------------------------------------------------------------- orderAfter

    /** {@code orderAfter} returns at once while the producer is still running, and so does the submit after it. */
    @Test
    public void orderAfterDoesNotBlockCaller() {
        List<E> lanes = lanes(2);
        Gate<W> gate = gate("producer");
        C producer = backend.submit(lanes.get(0), gate.work());
        C consumer = assertTimeoutPreemptively(PROMPT, () -> {
            backend.orderAfter(producer, lanes.get(1));
            return backend.submit(lanes.get(1), work.noop());
        }, "orderAfter blocked its caller");
        assertFalse(consumer.isDone(), consumer.label() + " ended before its producer " + producer.label());
        gate.open();
        assertSucceeded(consumer);
    }

    /**
     * Work submitted after {@code orderAfter} starts only after the producer has ended: never before the producer's
     * gate opened, and (where the backend settles each item before its successors start) after it was seen completed.
     */
    @Test
    public void orderAfterHoldsConsumerUntilProducer() {
        List<E> lanes = lanes(2);
        Gate<W> gate = gate("producer");
        AtomicBoolean opened = new AtomicBoolean();
        boolean settledFirst = work.settlesBeforeSuccessorsStart();
        C producer = backend.submit(lanes.get(0), gate.work());
        backend.orderAfter(producer, lanes.get(1));
        List<String> early = new CopyOnWriteArrayList<>();
        List<C> consumers = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            int n = i;
            consumers.add(backend.submit(lanes.get(1), work.marker(() -> {
                if (!opened.get()) {
                    early.add("consumer " + n + " started before the gate of " + producer.label() + " opened");
                }
                if (settledFirst && !producer.isDone()) {
                    early.add("consumer " + n + " started before " + producer.label() + " completed");
                }
            })));
        }
        assertFalse(consumers.get(0).isDone());
        opened.set(true);
        gate.open();
        for (C c : consumers) {
            assertSucceeded(c);
        }
        assertEquals(List.of(), early);
    }

    /** Work submitted before the {@code orderAfter} call is not held by it. */
    @Test
    public void orderAfterDoesNotHoldEarlierWork() {
        List<E> lanes = lanes(2);
        Gate<W> gate = gate("producer");
        C producer = backend.submit(lanes.get(0), gate.work());
        C before = backend.submit(lanes.get(1), work.noop());
        backend.orderAfter(producer, lanes.get(1));
        C after = backend.submit(lanes.get(1), work.noop());
        assertSucceeded(before);
        assertFalse(producer.isDone());
        assertFalse(after.isDone());
        gate.open();
        assertSucceeded(after);
    }

    /** A consumer ordered after several producers waits for every one of them. */
    @Test
    public void orderAfterSeveralProducersWaitsForAll() {
        List<E> lanes = lanes(3);
        Gate<W> first = gate("first-producer");
        Gate<W> second = gate("second-producer");
        C p1 = backend.submit(lanes.get(0), first.work());
        C p2 = backend.submit(lanes.get(1), second.work());
        backend.orderAfter(p1, lanes.get(2));
        backend.orderAfter(p2, lanes.get(2));
        AtomicReference<String> seen = new AtomicReference<>();
        AtomicBoolean secondOpened = new AtomicBoolean();
        boolean settledFirst = work.settlesBeforeSuccessorsStart();
        C consumer = backend.submit(lanes.get(2), work.marker(() -> seen.set("second gate opened: " + secondOpened.get()
                + (settledFirst ? ", producers done: " + p1.isDone() + "," + p2.isDone() : ""))));
        first.open();
        assertSucceeded(p1);
        assertFalse(consumer.isDone(), consumer.label() + " ran with " + p2.label() + " still running");
        secondOpened.set(true);
        second.open();
        assertSucceeded(consumer);
        assertEquals("second gate opened: true" + (settledFirst ? ", producers done: true,true" : ""), seen.get());
    }

    /** Ordering after a producer that already succeeded neither delays nor fails the consumer. */
    @Test
    public void orderAfterSucceededProducerDoesNotDelay() {
        List<E> lanes = lanes(2);
        C producer = backend.submit(lanes.get(0), work.noop());
        assertSucceeded(producer);
        backend.orderAfter(producer, lanes.get(1));
        assertSucceeded(backend.submit(lanes.get(1), work.noop()));
    }

    /** A producer of another device is refused before anything is queued: the lane goes on without waiting for it. */
    @Test
    public void crossDeviceOrderAfterRejectedBeforeQueuing() {
        SubmissionBackend<E, C, W> otherDevice = newBackend();
        ConformanceWork<W> otherWork = workOf(otherDevice);
        assertFalse(otherDevice.deviceName().equals(backend.deviceName()), "two backends share the device name " + backend.deviceName());
        E foreignLane = otherDevice.forkExecutors(otherDevice.rootExecutor(), 1).get(0);
        Gate<W> gate = otherWork.gate("foreign-producer");
        C foreign = otherDevice.submit(foreignLane, gate.work());
        E lane = lane();

        CrossDeviceOrderingException refused = assertThrows(CrossDeviceOrderingException.class, () -> backend.orderAfter(foreign, lane));
        assertTrue(refused.getMessage().contains(foreign.label()), "the error must name the producer: " + refused.getMessage());
        assertTrue(refused.getMessage().contains(backend.deviceName()), "the error must name the device: " + refused.getMessage());

        assertSucceeded(backend.submit(lane, work.noop()));
        assertFalse(foreign.isDone(), "the lane waited for a producer of another device");
        gate.open();
        assertSucceeded(foreign);
    }

    // ---------------------------------------------------------------- poisoning

    /** A failed producer poisons the consumer on another lane: it does not run and its cause names the producer. */
    @Test
    public void failedProducerPoisonsConsumerOnOtherLane() {
        List<E> lanes = lanes(2);
        Gate<W> gate = gate("before-failure");
        RuntimeException cause = new IllegalStateException("attention kernel failed");
        backend.submit(lanes.get(0), gate.work());
        C producer = backend.submit(lanes.get(0), work.failing(cause));
        backend.orderAfter(producer, lanes.get(1));
        AtomicBoolean ran = new AtomicBoolean();
        C consumer = backend.submit(lanes.get(1), work.marker(() -> ran.set(true)));
        gate.open();

        PoisonedPreconditionException poisoned = assertPoisoned(consumer, producer, producer);
        assertCausedBy(poisoned, cause);
        assertFalse(ran.get(), consumer.label() + " ran on the inputs of failed " + producer.label());
    }

    /** A failed producer on the consumer's own lane still poisons the consumer ordered after it. */
    @Test
    public void failedProducerOnSameLanePoisonsConsumer() {
        E lane = lane();
        C producer = backend.submit(lane, work.failing(new IllegalStateException("rmsnorm failed")));
        backend.orderAfter(producer, lane);
        AtomicBoolean ran = new AtomicBoolean();
        C consumer = backend.submit(lane, work.marker(() -> ran.set(true)));
        assertPoisoned(consumer, producer, producer);
        assertFalse(ran.get());
    }

    /** Ordering after a producer that has already failed poisons the next submission too. */
    @Test
    public void alreadyFailedProducerPoisonsConsumer() {
        List<E> lanes = lanes(2);
        C producer = backend.submit(lanes.get(0), work.failing(new IllegalStateException("embedding failed")));
        awaitOutcome(producer);
        backend.orderAfter(producer, lanes.get(1));
        assertPoisoned(backend.submit(lanes.get(1), work.noop()), producer, producer);
    }

    /** Poison travels down a chain of lanes; the last consumer's cause names the root producer and its cause. */
    @Test
    public void poisonPropagatesTransitively() {
        List<E> lanes = lanes(3);
        RuntimeException cause = new IllegalStateException("stage 0 failed: out of memory");
        C root = backend.submit(lanes.get(0), work.failing(cause));
        backend.orderAfter(root, lanes.get(1));
        C middle = backend.submit(lanes.get(1), work.noop());
        backend.orderAfter(middle, lanes.get(2));
        AtomicBoolean ran = new AtomicBoolean();
        C leaf = backend.submit(lanes.get(2), work.marker(() -> ran.set(true)));

        assertPoisoned(middle, root, root);
        PoisonedPreconditionException poisoned = assertPoisoned(leaf, middle, root);
        assertCausedBy(poisoned, cause);
        assertFalse(ran.get());
    }

    /** Poison fails only the next submission after {@code orderAfter}; later work on that lane runs normally. */
    @Test
    public void poisonFailsOnlyTheNextSubmission() {
        List<E> lanes = lanes(2);
        C producer = backend.submit(lanes.get(0), work.failing(new IllegalStateException("producer failed")));
        backend.orderAfter(producer, lanes.get(1));
        C poisoned = backend.submit(lanes.get(1), work.noop());
        AtomicBoolean ran = new AtomicBoolean();
        C later = backend.submit(lanes.get(1), work.marker(() -> ran.set(true)));
        assertPoisoned(poisoned, producer, producer);
        assertSucceeded(later);
        assertTrue(ran.get());
    }

    /** Work that fails fails only its own submission: its lane and the other lanes go on. */
    @Test
    public void workFailureFailsOnlyItsSubmission() {
        List<E> lanes = lanes(2);
        RuntimeException cause = new IllegalStateException("one request's kernel failed");
        C failed = backend.submit(lanes.get(0), work.failing(cause));
        C next = backend.submit(lanes.get(0), work.noop());
        C other = backend.submit(lanes.get(1), work.noop());
        assertCausedBy(assertInstanceOf(Outcome.Failed.class, awaitOutcome(failed)).cause(), cause);
        assertSucceeded(next);
        assertSucceeded(other);
    }

    /** Every submission is labelled, and no two submissions share a label (poison causes name them). */
    @Test
    public void labelsNameEachSubmission() {
        List<E> lanes = lanes(2);
        Set<String> labels = new HashSet<>();
        List<C> all = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            C c = backend.submit(lanes.get(i % 2), work.noop());
            all.add(c);
            assertFalse(c.label().isBlank(), "a submission has a blank label");
            assertTrue(labels.add(c.label()), "two submissions share the label " + c.label());
        }
        all.forEach(this::assertSucceeded);
    }

    // ---------------------------------------------------------------- retention

    /** A retained value is released exactly once, after its completion succeeded. */
    @Test
    public void retainReleasesExactlyOnceAfterSuccess() throws Exception {
        E lane = lane();
        Gate<W> gate = gate("holds-values");
        C c = backend.submit(lane, gate.work());
        List<RetentionLedger.Entry> values = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            values.add(retain(lane, c, "activation-" + i));
        }
        assertTrue(values.stream().allMatch(v -> v.releaseCount() == 0), "a value was released while its work ran");
        gate.open();
        assertSucceeded(c);
        assertSettledAndClean();
        assertSucceeded(backend.submit(lane, work.noop()));
        values.forEach(v -> assertEquals(1, v.releaseCount(), v.name() + " release count"));
    }

    /** A retained value is released exactly once, after its completion failed. */
    @Test
    public void retainReleasesExactlyOnceAfterFailure() throws Exception {
        E lane = lane();
        Gate<W> gate = gate("before-failure");
        backend.submit(lane, gate.work());
        C c = backend.submit(lane, work.failing(new IllegalStateException("failing work keeps no value")));
        RetentionLedger.Entry value = retain(lane, c, "kv-block-7");
        assertEquals(0, value.releaseCount());
        gate.open();
        assertInstanceOf(Outcome.Failed.class, awaitOutcome(c));
        assertSettledAndClean();
        assertEquals(1, value.releaseCount());
    }

    /** A value retained by a poisoned submission is released exactly once too. */
    @Test
    public void retainReleasesExactlyOnceAfterPoison() throws Exception {
        List<E> lanes = lanes(2);
        Gate<W> gate = gate("before-failure");
        backend.submit(lanes.get(0), gate.work());
        C producer = backend.submit(lanes.get(0), work.failing(new IllegalStateException("producer failed")));
        backend.orderAfter(producer, lanes.get(1));
        C consumer = backend.submit(lanes.get(1), work.noop());
        RetentionLedger.Entry value = retain(lanes.get(1), consumer, "weights-of-poisoned");
        gate.open();
        assertPoisoned(consumer, producer, producer);
        assertSettledAndClean();
        assertEquals(1, value.releaseCount());
    }

    /** Retaining a value on a completion that already ended releases it exactly once. */
    @Test
    public void retainOnEndedCompletionReleasesOnce() throws Exception {
        E lane = lane();
        C c = backend.submit(lane, work.noop());
        assertSucceeded(c);
        RetentionLedger.Entry value = retain(lane, c, "late-value");
        assertSettledAndClean();
        assertEquals(1, value.releaseCount());
    }

    /** Across lanes, orderings and failures, no value is ever released before its completion ended. */
    @Test
    public void neverReleasedBeforeCompletion() throws Exception {
        List<E> lanes = lanes(3);
        List<Gate<W>> heads = new ArrayList<>();
        List<C> all = new ArrayList<>();
        C previous = null;
        for (int l = 0; l < lanes.size(); l++) {
            E lane = lanes.get(l);
            Gate<W> head = gate("head-" + l);
            heads.add(head);
            if (previous != null) {
                backend.orderAfter(previous, lane);
            }
            C first = backend.submit(lane, head.work());
            retain(lane, first, "lane-" + l + "-head");
            all.add(first);
            for (int i = 0; i < 4; i++) {
                W w = i == 2 ? work.failing(new IllegalStateException("item " + i + " of lane " + l + " failed")) : work.noop();
                C c = backend.submit(lane, w);
                retain(lane, c, "lane-" + l + "-item-" + i);
                all.add(c);
            }
            previous = all.get(all.size() - 1);
        }
        assertTrue(ledger.entries().stream().allMatch(e -> e.releaseCount() == 0), "a value was released while every lane was held");
        for (int l = heads.size() - 1; l >= 0; l--) {
            heads.get(l).open();
        }
        for (C c : all) {
            awaitOutcome(c);
        }
        assertSettledAndClean();
    }

    /** A retained value stays reachable while its work runs, even when nobody else holds it. */
    @Test
    public void retainKeepsValueReachableUntilComplete() {
        E lane = lane();
        Gate<W> gate = gate("keeps-alive");
        C c = backend.submit(lane, gate.work());
        WeakReference<Object> value = retainUnreferenced(lane, c);
        for (int i = 0; i < 3; i++) {
            System.gc();
            assertNotNull(value.get(), "a value retained by running " + c.label() + " was collected");
        }
        gate.open();
        assertSucceeded(c);
    }

    // ---------------------------------------------------------------- shutdown

    /** After shutdown, submit, orderAfter and fork are refused with an error naming the executor; other lanes go on. */
    @Test
    public void submitAfterShutdownRefusedClearly() {
        List<E> lanes = lanes(2);
        E closed = lanes.get(0);
        C producer = backend.submit(lanes.get(1), work.noop());
        assertEnds(backend.shutdownExecutor(closed));

        ExecutorClosedException refused = assertThrows(ExecutorClosedException.class, () -> backend.submit(closed, work.noop()));
        assertTrue(refused.getMessage().contains(String.valueOf(closed)), "the error must name the lane: " + refused.getMessage());
        assertThrows(ExecutorClosedException.class, () -> backend.orderAfter(producer, closed));
        assertSucceeded(backend.submit(lanes.get(1), work.noop()));

        assertEnds(backend.shutdown());
        assertThrows(ExecutorClosedException.class, () -> backend.submit(lanes.get(1), work.noop()));
        assertThrows(ExecutorClosedException.class, () -> backend.forkExecutors(backend.rootExecutor(), 1));
    }

    /** Shutting an executor down returns at once, lets the work already submitted finish, then stops. */
    @Test
    public void shutdownLetsSubmittedWorkFinish() throws Exception {
        E lane = lane();
        Gate<W> gate = gate("in-flight");
        C first = backend.submit(lane, gate.work());
        CountDownLatch ran = new CountDownLatch(1);
        C last = backend.submit(lane, work.marker(ran::countDown));
        Completion stopped = assertTimeoutPreemptively(PROMPT, () -> backend.shutdownExecutor(lane), "shutdownExecutor waited for work");
        assertSame(stopped, backend.shutdownExecutor(lane), "shutting an executor down twice must return the same completion");
        // The callback's own future, not the completion, says when it ran: a waiter added after the end runs at once.
        CompletableFuture<String> seenAtStop = new CompletableFuture<>();
        stopped.whenDone(o -> seenAtStop.complete(first.isDone() + "," + last.isDone()));
        assertFalse(stopped.isDone(), "the executor stopped with work still running");

        gate.open();
        assertEnds(stopped);
        assertSucceeded(last);
        assertEquals(0, ran.getCount());
        assertEquals("true,true", seenAtStop.get(timeout().toMillis(), TimeUnit.MILLISECONDS),
                "the executor stopped before its submitted work ended");
    }

    /** Shutting the backend down stops every executor, each after its submitted work. */
    @Test
    public void backendShutdownStopsEveryExecutor() {
        List<E> lanes = lanes(3);
        List<Gate<W>> held = new ArrayList<>();
        List<C> work0 = new ArrayList<>();
        for (int i = 0; i < lanes.size(); i++) {
            Gate<W> gate = gate("lane-" + i);
            held.add(gate);
            work0.add(backend.submit(lanes.get(i), gate.work()));
        }
        Completion all = assertTimeoutPreemptively(PROMPT, () -> backend.shutdown(), "shutdown waited for work");
        assertSame(all, backend.shutdown(), "shutting down twice must return the same completion");
        assertFalse(all.isDone());
        held.forEach(Gate::open);
        assertEnds(all);
        work0.forEach(this::assertSucceeded);
    }

    /**
     * A fork racing the backend's shutdown is either refused or returns executors that the shutdown
     * closed: once shutdown has ended, no forked executor accepts work. Both calls start together from
     * one barrier, on fresh devices, many times over.
     */
    @Test
    public void forkRacingShutdownNeverOutlivesShutdown() throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            for (int round = 0; round < RACE_ROUNDS; round++) {
                SubmissionBackend<E, C, W> device = newBackend();
                ConformanceWork<W> deviceWork = workOf(device);
                E root = device.rootExecutor();
                CyclicBarrier start = new CyclicBarrier(2);
                Future<List<E>> fork = pool.submit(() -> {
                    start.await();
                    try {
                        return device.forkExecutors(root, 2);
                    } catch (ExecutorClosedException refused) {
                        return List.of();
                    }
                });
                Future<Completion> stop = pool.submit(() -> {
                    start.await();
                    return device.shutdown();
                });
                List<E> forked = fork.get(timeout().toMillis(), TimeUnit.MILLISECONDS);
                assertEnds(stop.get(timeout().toMillis(), TimeUnit.MILLISECONDS));
                for (E lane : forked) {
                    assertThrows(ExecutorClosedException.class, () -> device.submit(lane, deviceWork.noop()),
                            "round " + round + ": " + lane + " was forked while " + device.deviceName()
                                    + " shut down and still accepts work after the shutdown ended");
                }
            }
        } finally {
            pool.shutdownNow();
        }
    }

    // ---------------------------------------------------------------- helpers for subclasses and tests

    /** The backend under test in the current test. */
    protected final SubmissionBackend<E, C, W> backend() {
        return backend;
    }

    /** The ledger of the current test. */
    protected final RetentionLedger ledger() {
        return ledger;
    }

    /** Waits (with the suite's deadline) until {@code c} ends and returns its outcome. */
    protected final Outcome awaitOutcome(Completion c) {
        CompletableFuture<Outcome> ended = new CompletableFuture<>();
        c.whenDone(ended::complete);
        try {
            return ended.get(timeout().toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            return fail(c.label() + " did not end within " + timeout() + ": the backend is hung or lost the work");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return fail("interrupted while waiting for " + c.label());
        } catch (ExecutionException e) {
            return fail("waiting for " + c.label() + " failed", e.getCause());
        }
    }

    /** Asserts that {@code c} ends successfully within the deadline. */
    protected final void assertSucceeded(Completion c) {
        Outcome o = awaitOutcome(c);
        if (o instanceof Outcome.Failed failed) {
            fail(c.label() + " failed: " + failed.cause(), failed.cause());
        }
    }

    private void assertEnds(Completion c) {
        awaitOutcome(c);
    }

    private PoisonedPreconditionException assertPoisoned(C consumer, C direct, C root) {
        Outcome.Failed failed = assertInstanceOf(Outcome.Failed.class, awaitOutcome(consumer), consumer.label() + " must fail poisoned");
        PoisonedPreconditionException poisoned = assertInstanceOf(PoisonedPreconditionException.class, failed.cause(),
                consumer.label() + " must fail with a poisoned precondition");
        assertEquals(root.label(), poisoned.rootProducer(), "the poison cause must name the root producer");
        assertEquals(direct.label(), poisoned.directProducer(), "the poison cause must name the direct producer");
        assertTrue(poisoned.getMessage().contains(root.label()), "the message must name " + root.label() + ": " + poisoned.getMessage());
        return poisoned;
    }

    private RetentionLedger.Entry retain(E lane, C completion, String name) {
        RetentionLedger.Entry entry = ledger.retain(name, completion);
        backend.retainUntilComplete(lane, completion, entry);
        return entry;
    }

    private WeakReference<Object> retainUnreferenced(E lane, C completion) {
        Object value = new byte[1024];
        backend.retainUntilComplete(lane, completion, value);
        return new WeakReference<>(value);
    }

    private void submitAndForget(E lane, W w) {
        backend.submit(lane, w);
    }

    private void assertSettledAndClean() throws InterruptedException {
        assertTrue(ledger.awaitSettled(timeout()), "values were not released within " + timeout() + ": " + ledger.violations());
        ledger.assertClean();
    }

    private void awaitLatch(CountDownLatch latch, String what) throws InterruptedException {
        assertTrue(latch.await(timeout().toMillis(), TimeUnit.MILLISECONDS), "timed out waiting for " + what);
    }

    private static void assertCausedBy(Throwable failure, Throwable expected) {
        Set<Throwable> seen = Collections.newSetFromMap(new IdentityHashMap<>());
        for (Throwable t = failure; t != null && seen.add(t); t = t.getCause()) {
            if (t == expected) {
                return;
            }
        }
        fail("expected " + expected + " in the cause chain of " + failure, failure);
    }

    private E lane() {
        return lanes(1).get(0);
    }

    private List<E> lanes(int n) {
        return backend.forkExecutors(backend.rootExecutor(), n);
    }

    private Gate<W> gate(String name) {
        return work.gate(name);
    }

    private SubmissionBackend<E, C, W> newBackend() {
        SubmissionBackend<E, C, W> b = createBackend();
        backends.add(b);
        return b;
    }

    /** Wraps the subclass's work so that every gate is opened after the test, whatever happened. */
    private ConformanceWork<W> workOf(SubmissionBackend<E, C, W> b) {
        ConformanceWork<W> made = workFor(b);
        return new ConformanceWork<>() {
            @Override
            public W noop() {
                return made.noop();
            }

            @Override
            public W failing(RuntimeException cause) {
                return made.failing(cause);
            }

            @Override
            public W marker(Runnable onReached) {
                return made.marker(onReached);
            }

            @Override
            public boolean settlesBeforeSuccessorsStart() {
                return made.settlesBeforeSuccessorsStart();
            }

            @Override
            public Gate<W> gate(String name) {
                Gate<W> g = made.gate(name);
                gates.add(g);
                return g;
            }
        };
    }
}
