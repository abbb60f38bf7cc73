package io.graphlane.core.completion;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(value = 30, unit = TimeUnit.SECONDS)
class SettableCompletionTest {

    @Test
    void theFirstRecordWinsAndLaterOnesReportFalse() {
        SettableCompletion c = new SettableCompletion("cpu0/lane-0#0");
        assertFalse(c.isDone());
        assertTrue(c.outcome().isEmpty());
        RuntimeException cause = new IllegalStateException("first");
        assertTrue(c.fail(cause));
        assertFalse(c.succeed());
        assertFalse(c.fail(new IllegalStateException("second")));
        assertTrue(c.isDone());
        assertSame(cause, c.failure().orElseThrow());
    }

    @Test
    void callbacksRunOnceOnTheRecordingThreadAndLateOnesAtOnceOnTheCaller() throws Exception {
        SettableCompletion c = new SettableCompletion("x#1");
        List<String> calls = new CopyOnWriteArrayList<>();
        c.whenDone(o -> calls.add("early on " + Thread.currentThread().getName()));
        Thread recorder = new Thread(c::succeed, "recorder");
        recorder.start();
        recorder.join();
        c.succeed();
        assertEquals(List.of("early on recorder"), calls);
        c.whenDone(o -> calls.add("late on " + Thread.currentThread().getName()));
        assertEquals(List.of("early on recorder", "late on " + Thread.currentThread().getName()), calls);
    }

    @Test
    void aThrowingCallbackStopsNeitherTheOthersNorTheRecorder() {
        SettableCompletion c = new SettableCompletion("x#2");
        AtomicInteger ran = new AtomicInteger();
        c.whenDone(o -> {
            throw new IllegalStateException("callback bug");
        });
        c.whenDone(o -> ran.incrementAndGet());
        assertTrue(c.succeed());
        assertEquals(1, ran.get());
    }

    @Test
    void everyWaiterOnEveryThreadGetsTheSameOutcome() throws Exception {
        SettableCompletion c = new SettableCompletion("x#3");
        ExecutorService pool = Executors.newFixedThreadPool(6);
        try {
            CountDownLatch started = new CountDownLatch(6);
            List<Future<Outcome>> waits = new ArrayList<>();
            for (int i = 0; i < 6; i++) {
                waits.add(pool.submit(() -> {
                    started.countDown();
                    return c.await();
                }));
            }
            assertTrue(started.await(10, TimeUnit.SECONDS));
            RuntimeException cause = new IllegalArgumentException("bad");
            c.fail(cause);
            for (Future<Outcome> w : waits) {
                assertSame(cause, assertInstanceOf(Outcome.Failed.class, w.get(10, TimeUnit.SECONDS)).cause());
            }
            assertSame(c.await(), c.await());
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void awaitSuccessAndTheStageCarryTheRecordedCause() throws Exception {
        RuntimeException cause = new IllegalStateException("kernel failed");
        SettableCompletion c = SettableCompletion.failed("gpu0/stream-1#9", cause);
        CompletionFailedException thrown = assertThrows(CompletionFailedException.class, c::awaitSuccess);
        assertSame(cause, thrown.getCause());
        assertTrue(thrown.getMessage().contains("gpu0/stream-1#9"), thrown.getMessage());
        CompletableFuture<Void> stage = c.toStage().toCompletableFuture();
        assertSame(cause, stage.handle((v, t) -> t).get());

        SettableCompletion ok = SettableCompletion.succeeded("ok#0");
        ok.awaitSuccess();
        assertTrue(ok.toStage().toCompletableFuture().isDone());
        assertTrue(ok.failure().isEmpty());
    }

    @Test
    void awaitUninterruptiblyKeepsTheInterruptFlag() throws Exception {
        SettableCompletion c = new SettableCompletion("x#4");
        CompletableFuture<Boolean> interruptedAfter = new CompletableFuture<>();
        CountDownLatch waiting = new CountDownLatch(1);
        Thread waiter = new Thread(() -> {
            waiting.countDown();
            c.awaitUninterruptibly();
            interruptedAfter.complete(Thread.currentThread().isInterrupted());
        });
        waiter.start();
        assertTrue(waiting.await(10, TimeUnit.SECONDS));
        waiter.interrupt();
        c.succeed();
        assertTrue(interruptedAfter.get(10, TimeUnit.SECONDS));
    }

    @Test
    void poisonCarriesTheRootProducerThroughAChain() {
        RuntimeException root = new IllegalStateException("out of memory");
        PoisonedPreconditionException first = PoisonedPreconditionException.of("b#0", "a#0", root);
        PoisonedPreconditionException second = PoisonedPreconditionException.of("c#0", "b#0", first);
        assertEquals("a#0", first.rootProducer());
        assertEquals("a#0", second.rootProducer());
        assertEquals("b#0", second.directProducer());
        assertSame(root, second.rootCause());
        assertTrue(second.getMessage().contains("c#0 did not run because a#0 failed (reached through b#0): out of memory"),
                second.getMessage());
    }
}
