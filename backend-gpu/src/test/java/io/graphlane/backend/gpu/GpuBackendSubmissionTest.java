package io.graphlane.backend.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.core.backend.CrossDeviceOrderingException;
import io.graphlane.core.backend.ExecutorClosedException;
import io.graphlane.core.completion.Outcome;
import io.graphlane.core.completion.PoisonedPreconditionException;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import jcuda.driver.CUresult;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The host-side laws of the GPU submission backend, over a device whose events the test reaches. */
@Timeout(value = 20, unit = TimeUnit.SECONDS)
class GpuBackendSubmissionTest {
    private final ScriptedDevice device = new ScriptedDevice("sim0");
    private final GpuBackend backend = device.backend();

    @AfterEach
    void shutDown() throws Exception {
        var stopped = backend.shutdown();
        device.events.forEach(ScriptedDevice.Event::reach); // also the events shutdown recorded to drain each lane
        stopped.toStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
    }

    @Test
    void completionEndsOnlyWhenItsOwnEventIsReached() throws InterruptedException {
        GpuStream lane = backend.forkExecutors(backend.rootExecutor(), 1).get(0);
        GpuCompletion first = backend.submit(lane, GpuWork.NOOP);
        ScriptedDevice.Event firstEvent = device.lastEvent();
        GpuCompletion second = backend.submit(lane, GpuWork.NOOP);
        ScriptedDevice.Event secondEvent = device.lastEvent();

        secondEvent.reach();
        assertEquals(Outcome.SUCCESS, second.await());
        assertFalse(first.isDone(), "a later submission's event must not complete an earlier one");
        firstEvent.reach();
        assertEquals(Outcome.SUCCESS, first.await());
        // The poller destroys an event right after settling its completion, so a waiter may get there first.
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!(firstEvent.destroyed && secondEvent.destroyed) && System.nanoTime() < deadline) {
            Thread.onSpinWait();
        }
        assertTrue(firstEvent.destroyed && secondEvent.destroyed, "events are destroyed once settled");
    }

    @Test
    void emptySubmissionIsAlreadyCompleteAndRecordsNothing() {
        int before = device.events.size();
        GpuCompletion c = backend.submit(backend.rootExecutor(), List.of());
        assertTrue(c.isDone());
        assertEquals(Outcome.SUCCESS, c.outcome().orElseThrow());
        assertEquals(before, device.events.size());
    }

    @Test
    void orderAfterEnqueuesAStreamWaitOnTheProducersEventWithoutBlocking() throws InterruptedException {
        List<GpuStream> lanes = backend.forkExecutors(backend.rootExecutor(), 2);
        GpuCompletion producer = backend.submit(lanes.get(0), GpuWork.NOOP);
        ScriptedDevice.Event producerEvent = device.lastEvent();

        backend.orderAfter(producer, lanes.get(1)); // returns although the producer is running
        GpuCompletion consumer = backend.submit(lanes.get(1), GpuWork.NOOP);

        int wait = device.log.indexOf(lanes.get(1).name() + " wait " + producerEvent);
        int record = device.log.indexOf(lanes.get(1).name() + " record " + device.lastEvent());
        assertTrue(wait >= 0 && wait < record, "the wait precedes the consumer's work: " + device.log);
        producerEvent.reach();
        device.lastEvent().reach();
        assertEquals(Outcome.SUCCESS, consumer.await());
    }

    @Test
    void orderAfterASucceededProducerNeedsNoDeviceWait() throws InterruptedException {
        List<GpuStream> lanes = backend.forkExecutors(backend.rootExecutor(), 2);
        GpuCompletion producer = backend.submit(lanes.get(0), GpuWork.NOOP);
        device.lastEvent().reach();
        producer.await();
        backend.orderAfter(producer, lanes.get(1));
        assertTrue(device.log.stream().noneMatch(l -> l.contains(" wait ")), device.log.toString());
    }

    /** Submits a no-op and then work whose enqueue throws {@code boom}, so the failure lies behind queued work. */
    private GpuCompletion submitFailingEnqueue(GpuStream lane, RuntimeException boom) {
        return backend.submit(lane, List.of(GpuWork.NOOP, s -> {
            throw boom;
        }));
    }

    @Test
    void aConsumerOfAProducerWhoseEnqueueFailedIsRefusedBeforeTheProducersEventIsReached() throws InterruptedException {
        List<GpuStream> lanes = backend.forkExecutors(backend.rootExecutor(), 2);
        IllegalStateException boom = new IllegalStateException("kernel arguments rejected");
        GpuCompletion producer = submitFailingEnqueue(lanes.get(0), boom);
        ScriptedDevice.Event producerEvent = device.lastEvent();
        backend.orderAfter(producer, lanes.get(1)); // the device-side wait on that event would pass once it is reached
        AtomicInteger ran = new AtomicInteger();
        int eventsBefore = device.events.size();
        GpuCompletion consumer = backend.submit(lanes.get(1), s -> ran.incrementAndGet());

        assertEquals(0, ran.get(), "work ordered after a producer known to fail must not be enqueued");
        assertEquals(eventsBefore, device.events.size());
        PoisonedPreconditionException poisoned = assertInstanceOf(PoisonedPreconditionException.class,
                ((Outcome.Failed) consumer.await()).cause());
        assertEquals(producer.label(), poisoned.rootProducer());
        assertSame(boom, poisoned.rootCause());
        assertFalse(producer.isDone(), "the producer itself still ends only at its event");
        producerEvent.reach();
        assertSame(boom, ((Outcome.Failed) producer.await()).cause());
    }

    @Test
    void failedEnqueuePoisonsTheNextSubmissionOnAnotherLaneWithoutRunningIt() throws InterruptedException {
        List<GpuStream> lanes = backend.forkExecutors(backend.rootExecutor(), 2);
        IllegalStateException boom = new IllegalStateException("kernel arguments rejected");
        GpuCompletion producer = submitFailingEnqueue(lanes.get(0), boom);
        assertFalse(producer.isDone(), "an enqueue failure is reported only after the work enqueued before it has finished");
        device.lastEvent().reach();
        assertSame(boom, ((Outcome.Failed) producer.await()).cause());

        backend.orderAfter(producer, lanes.get(1));
        AtomicInteger ran = new AtomicInteger();
        int eventsBefore = device.events.size();
        GpuCompletion consumer = backend.submit(lanes.get(1), s -> ran.incrementAndGet());
        Outcome outcome = consumer.await();

        PoisonedPreconditionException poisoned = assertInstanceOf(PoisonedPreconditionException.class, ((Outcome.Failed) outcome).cause());
        assertEquals(producer.label(), poisoned.rootProducer());
        assertSame(boom, poisoned.rootCause());
        assertEquals(0, ran.get(), "poisoned work is never enqueued");
        assertEquals(eventsBefore, device.events.size());
    }

    @Test
    void asynchronousErrorOfProducerIsAttributedAsPoisonEvenWhenTheConsumersEventFailsFirst() throws InterruptedException {
        List<GpuStream> lanes = backend.forkExecutors(backend.rootExecutor(), 3);
        GpuCompletion producer = backend.submit(lanes.get(0), GpuWork.NOOP);
        ScriptedDevice.Event producerEvent = device.lastEvent();
        backend.orderAfter(producer, lanes.get(1));
        GpuCompletion consumer = backend.submit(lanes.get(1), GpuWork.NOOP);
        backend.orderAfter(consumer, lanes.get(2));
        GpuCompletion grandConsumer = backend.submit(lanes.get(2), GpuWork.NOOP);
        ScriptedDevice.Event grandEvent = device.lastEvent();
        ScriptedDevice.Event consumerEvent = device.events.get(device.events.size() - 2);

        grandEvent.fail(CUresult.CUDA_ERROR_ILLEGAL_ADDRESS);
        consumerEvent.fail(CUresult.CUDA_ERROR_ILLEGAL_ADDRESS);
        assertFalse(grandConsumer.isDone(), "a consumer is not settled before its producers");
        producerEvent.fail(CUresult.CUDA_ERROR_ILLEGAL_ADDRESS);

        CudaException root = assertInstanceOf(CudaException.class, ((Outcome.Failed) producer.await()).cause());
        assertTrue(root.isSticky());
        assertTrue(root.getMessage().contains("CUDA_ERROR_ILLEGAL_ADDRESS"), root.getMessage());
        PoisonedPreconditionException poisoned =
                assertInstanceOf(PoisonedPreconditionException.class, ((Outcome.Failed) grandConsumer.await()).cause());
        assertEquals(producer.label(), poisoned.rootProducer());
        assertEquals(consumer.label(), poisoned.directProducer());
        assertFalse(producer.endProven());
    }

    @Test
    void retainedValueIsReleasedExactlyOnceAfterItsCompletionAndNotBefore() throws Exception {
        GpuStream lane = backend.rootExecutor();
        GpuCompletion c = backend.submit(lane, GpuWork.NOOP);
        AtomicInteger closes = new AtomicInteger();
        AutoCloseable buffer = closes::incrementAndGet;
        backend.retainUntilComplete(lane, c, buffer);
        backend.retainUntilComplete(lane, c, (AutoCloseable) closes::incrementAndGet);
        assertEquals(0, closes.get());
        var released = afterCallbacksRegisteredSoFar(c);
        device.lastEvent().reach();
        released.get(10, TimeUnit.SECONDS);
        assertEquals(2, closes.get(), "each retained value closed once");
    }

    @Test
    void valueRetainedByWorkThatLostTheContextIsLeakedNotFreed() throws Exception {
        GpuStream lane = backend.rootExecutor();
        GpuCompletion c = backend.submit(lane, GpuWork.NOOP);
        AtomicInteger closes = new AtomicInteger();
        backend.retainUntilComplete(lane, c, (AutoCloseable) closes::incrementAndGet);
        var released = afterCallbacksRegisteredSoFar(c);
        device.lastEvent().fail(CUresult.CUDA_ERROR_LAUNCH_FAILED);
        released.get(10, TimeUnit.SECONDS);
        assertEquals(0, closes.get());
    }

    @Test
    void valueRetainedByWorkWithARecoverableErrorIsStillReleased() throws Exception {
        GpuStream lane = backend.rootExecutor();
        GpuCompletion c = backend.submit(lane, GpuWork.NOOP);
        AtomicInteger closes = new AtomicInteger();
        backend.retainUntilComplete(lane, c, (AutoCloseable) closes::incrementAndGet);
        var released = afterCallbacksRegisteredSoFar(c);
        device.lastEvent().fail(CUresult.CUDA_ERROR_INVALID_VALUE);
        released.get(10, TimeUnit.SECONDS);
        assertFalse(c.outcome().orElseThrow().isSuccess());
        assertEquals(1, closes.get());
    }

    @Test
    void orderingAcrossDevicesIsRefusedBeforeAnythingIsQueued() throws InterruptedException {
        ScriptedDevice otherDevice = new ScriptedDevice("sim1");
        GpuBackend other = otherDevice.backend();
        try {
            GpuCompletion producer = other.submit(other.rootExecutor(), GpuWork.NOOP);
            int logged = device.log.size();
            assertThrows(CrossDeviceOrderingException.class, () -> backend.orderAfter(producer, backend.rootExecutor()));
            assertEquals(logged, device.log.size());
        } finally {
            var stopped = other.shutdown();
            otherDevice.events.forEach(ScriptedDevice.Event::reach);
            stopped.await();
        }
    }

    @Test
    void onePollerThreadRunsEveryCallbackOfTheDevice() throws InterruptedException {
        List<GpuStream> lanes = backend.forkExecutors(backend.rootExecutor(), 4);
        Set<Thread> threads = ConcurrentHashMap.newKeySet();
        int before = Thread.activeCount();
        for (int i = 0; i < 200; i++) {
            GpuCompletion c = backend.submit(lanes.get(i % 4), GpuWork.NOOP);
            c.whenDone(o -> threads.add(Thread.currentThread()));
        }
        assertTrue(Thread.activeCount() <= before + 1, "no thread per completion");
        device.events.forEach(ScriptedDevice.Event::reach);
        for (ScriptedDevice.Event e : device.events) {
            while (!e.destroyed) {
                Thread.onSpinWait();
            }
        }
        assertEquals(Set.of(backend.poller().thread()), threads);
    }

    @Test
    void shutdownDrainsSubmittedWorkThenRefusesAndReleasesTheDevice() throws InterruptedException {
        GpuStream lane = backend.forkExecutors(backend.rootExecutor(), 1).get(0);
        GpuCompletion running = backend.submit(lane, GpuWork.NOOP);
        var stopped = backend.shutdown();
        assertSame(stopped, backend.shutdown(), "closing twice returns the same completion");
        assertThrows(ExecutorClosedException.class, () -> backend.submit(lane, GpuWork.NOOP));
        assertFalse(stopped.isDone(), "running work keeps the device open");
        device.events.forEach(ScriptedDevice.Event::reach);
        assertEquals(Outcome.SUCCESS, stopped.await());
        assertTrue(running.isDone());
        assertTrue(device.closed);
        assertEquals(2, device.destroyedStreams.get());
    }

    /**
     * A future that completes after the callbacks registered on the still running {@code c} so far
     * (they run in registration order on the recording thread).
     */
    private static java.util.concurrent.CompletableFuture<Void> afterCallbacksRegisteredSoFar(GpuCompletion c) {
        assertFalse(c.isDone());
        java.util.concurrent.CompletableFuture<Void> after = new java.util.concurrent.CompletableFuture<>();
        c.whenDone(o -> after.complete(null));
        return after;
    }
}
