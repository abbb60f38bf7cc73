package io.graphlane.core.backend;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.core.completion.Completion;
import io.graphlane.core.completion.SettableCompletion;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The shared executor bookkeeping of a backend, over a backend whose executors are plain records of what was done to them. */
@Timeout(value = 20, unit = TimeUnit.SECONDS)
class AbstractSubmissionBackendTest {

    @Test
    void aForkInProgressWhenShutdownStartsIsShutDownWithTheOthers() throws Exception {
        CountDownLatch creating = new CountDownLatch(1);
        SettableCompletion proceed = new SettableCompletion("proceed");
        LedgerBackend backend = new LedgerBackend("race", name -> {
            if (name.endsWith("/lane-0")) {
                creating.countDown();
                proceed.awaitUninterruptibly();
            }
        });
        CompletableFuture<List<Lane>> forked = new CompletableFuture<>();
        CompletableFuture<Completion> stopped = new CompletableFuture<>();
        try {
            start("forker", () -> forked.complete(backend.forkExecutors(backend.rootExecutor(), 1)));
            assertTrue(creating.await(10, TimeUnit.SECONDS), "the fork never reached createExecutor");

            // The fork is past its shutdown check, inside createExecutor: a shutdown now must wait for it.
            Thread shutter = start("shutter", () -> stopped.complete(backend.shutdown()));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (shutter.getState() != Thread.State.BLOCKED && shutter.getState() != Thread.State.TERMINATED
                    && System.nanoTime() < deadline) {
                Thread.onSpinWait(); // until shutdown is either held back by the fork or has returned
            }
            assertFalse(stopped.isDone(), "shutdown ended while a fork was still creating an executor");
        } finally {
            proceed.succeed();
        }

        Lane lane = forked.get(10, TimeUnit.SECONDS).get(0);
        assertTrue(stopped.get(10, TimeUnit.SECONDS).isDone());
        assertTrue(lane.stopped.isDone(), lane.name + " was forked while the backend shut down and outlived the shutdown");
        assertThrows(ExecutorClosedException.class, () -> backend.submit(lane, List.of()));
    }

    @Test
    void aForkAfterShutdownIsRefusedNamingTheDevice() {
        LedgerBackend backend = new LedgerBackend("dev-shut", name -> { });
        backend.shutdown();
        ExecutorClosedException e = assertThrows(ExecutorClosedException.class, () -> backend.forkExecutors(backend.rootExecutor(), 0));
        assertTrue(e.getMessage().startsWith("forkExecutors refused: executor dev-shut is shut down"), e.getMessage());
        assertEquals(1, backend.created.size(), "nothing is created after shutdown");
    }

    @Test
    void lanesAreNamedFromOneCounterAcrossForks() {
        LedgerBackend backend = new LedgerBackend("named", name -> { });
        backend.forkExecutors(backend.rootExecutor(), 2);
        Lane forkedFromLane = backend.forkExecutors(backend.rootExecutor(), 1).get(0);
        backend.forkExecutors(forkedFromLane, 1);
        assertEquals(List.of("named/root", "named/lane-0", "named/lane-1", "named/lane-2", "named/lane-3"), backend.created);
        IllegalArgumentException negative = assertThrows(IllegalArgumentException.class, () -> backend.forkExecutors(forkedFromLane, -1));
        assertEquals("forkExecutors: count must be >= 0, got -1", negative.getMessage());
    }

    @Test
    void anExecutorOfAnotherBackendIsRefusedBeforeTheSubclassSeesIt() {
        LedgerBackend a = new LedgerBackend("dev-a", name -> { });
        LedgerBackend b = new LedgerBackend("dev-b", name -> { });
        Lane foreign = b.forkExecutors(b.rootExecutor(), 1).get(0);
        for (Runnable call : List.<Runnable>of(
                () -> a.submit(foreign, List.of()),
                () -> a.forkExecutors(foreign, 1),
                () -> a.shutdownExecutor(foreign),
                () -> a.orderAfter(new LaneCompletion(a, "dev-a/root#0"), foreign))) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, call::run);
            assertTrue(e.getMessage().endsWith("executor dev-b/lane-0 belongs to device dev-b, not to dev-a"), e.getMessage());
        }
        assertEquals(0, a.enqueued.get());
        assertFalse(foreign.stopped.isDone());
    }

    @Test
    void aProducerOfAnotherDeviceIsRefusedBeforeAnythingIsQueued() {
        LedgerBackend a = new LedgerBackend("dev-a", name -> { });
        LedgerBackend b = new LedgerBackend("dev-b", name -> { });
        LaneCompletion foreign = b.submit(b.rootExecutor(), List.of(() -> { }));
        CrossDeviceOrderingException e = assertThrows(CrossDeviceOrderingException.class, () -> a.orderAfter(foreign, a.rootExecutor()));
        assertTrue(e.getMessage().contains(foreign.label()) && e.getMessage().contains("dev-b") && e.getMessage().contains("dev-a/root"),
                e.getMessage());
        assertEquals(0, a.waits.get());
    }

    @Test
    void shutdownClosesEveryExecutorOnceThenStopsTheDeviceOnceTheyHaveStopped() {
        LedgerBackend backend = new LedgerBackend("stops", name -> { });
        backend.holdStops = true;
        List<Lane> lanes = backend.forkExecutors(backend.rootExecutor(), 2);
        Completion all = backend.shutdown();
        assertSame(all, backend.shutdown(), "shutting down twice must return the same completion");
        assertEquals(3, backend.closed.get(), "each executor is closed once");
        assertFalse(all.isDone());
        backend.rootExecutor().stopped.succeed();
        lanes.get(0).stopped.succeed();
        assertEquals(0, backend.deviceStops.get(), "the device stopped before every executor had");
        lanes.get(1).stopped.succeed();
        assertEquals(1, backend.deviceStops.get());
        assertTrue(all.isDone());
    }

    @Test
    void aBackendWhoseConstructorNeverOpenedItsRootSaysSo() {
        LedgerBackend backend = new LedgerBackend("no-root", name -> { }, false);
        IllegalStateException e = assertThrows(IllegalStateException.class, backend::rootExecutor);
        assertTrue(e.getMessage().contains("openRootExecutor()"), e.getMessage());
    }

    private static Thread start(String name, Runnable body) {
        Thread t = new Thread(body, name);
        t.setDaemon(true);
        t.start();
        return t;
    }

    /** An executor that records what its backend did to it. */
    private static final class Lane {
        final LedgerBackend owner;
        final String name;
        final SettableCompletion stopped;
        boolean closed;

        Lane(LedgerBackend owner, String name) {
            this.owner = owner;
            this.name = name;
            this.stopped = new SettableCompletion(name + " (stopped)");
        }

        @Override
        public String toString() {
            return name;
        }
    }

    private static final class LaneCompletion extends SettableCompletion {
        final LedgerBackend owner;

        LaneCompletion(LedgerBackend owner, String label) {
            super(label);
            this.owner = owner;
        }
    }

    /** Runs work at once on the caller; closing a lane stops it at once unless {@code holdStops}. */
    private static final class LedgerBackend extends AbstractSubmissionBackend<Lane, LaneCompletion, Runnable> {
        final List<String> created = new CopyOnWriteArrayList<>();
        final AtomicInteger enqueued = new AtomicInteger();
        final AtomicInteger waits = new AtomicInteger();
        final AtomicInteger closed = new AtomicInteger();
        final AtomicInteger deviceStops = new AtomicInteger();
        private final Consumer<String> onCreate;
        volatile boolean holdStops;

        LedgerBackend(String deviceName, Consumer<String> onCreate) {
            this(deviceName, onCreate, true);
        }

        LedgerBackend(String deviceName, Consumer<String> onCreate, boolean openRoot) {
            super(deviceName);
            this.onCreate = onCreate;
            if (openRoot) {
                openRootExecutor();
            }
        }

        @Override
        protected Lane createExecutor(String name) {
            onCreate.accept(name);
            created.add(name);
            return new Lane(this, name);
        }

        @Override
        protected SubmissionBackend<?, ?, ?> executorBackend(Lane executor) {
            return executor.owner;
        }

        @Override
        protected String executorName(Lane executor) {
            return executor.name;
        }

        @Override
        protected SubmissionBackend<?, ?, ?> completionBackend(LaneCompletion completion) {
            return completion.owner;
        }

        @Override
        protected LaneCompletion enqueue(Lane executor, List<? extends Runnable> work) {
            synchronized (executor) {
                if (executor.closed) {
                    throw new ExecutorClosedException(executor.name, "submit");
                }
            }
            LaneCompletion completion = new LaneCompletion(this, executor.name + "#" + enqueued.getAndIncrement());
            work.forEach(Runnable::run);
            completion.succeed();
            return completion;
        }

        @Override
        protected void enqueueWait(LaneCompletion producer, Lane executor) {
            waits.incrementAndGet();
        }

        @Override
        protected Completion closeExecutor(Lane executor) {
            synchronized (executor) {
                if (!executor.closed) {
                    executor.closed = true;
                    closed.incrementAndGet();
                    if (!holdStops) {
                        executor.stopped.succeed();
                    }
                }
            }
            return executor.stopped;
        }

        @Override
        protected void stopDevice(List<Completion> executorsStopped, SettableCompletion done) {
            deviceStops.incrementAndGet();
            done.succeed();
        }

        @Override
        public void retainUntilComplete(Lane executor, LaneCompletion completion, Object value) {
            checkOwned(executor, "retainUntilComplete");
            completion.whenDone(outcome -> { });
        }
    }
}
