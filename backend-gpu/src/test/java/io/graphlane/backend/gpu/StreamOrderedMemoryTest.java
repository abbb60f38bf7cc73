package io.graphlane.backend.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.core.backend.ExecutorClosedException;
import io.graphlane.core.completion.Completion;
import io.graphlane.core.completion.Outcome;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import jcuda.driver.CUresult;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Where and when device memory is allocated and freed, over a scripted device: allocation on the
 * lane that uses it, frees in stream order behind the last use (a stream wait on that use's event
 * when it ran on another stream), exactly once whichever way comes first, never on a stream that
 * was shut down, leaked when the last use lost the context, and the synchronous fallback of a
 * device without memory pools. The scripted device counts every free of an unknown, already freed
 * or released pointer, or on a destroyed stream, as a bad free.
 */
@Timeout(value = 20, unit = TimeUnit.SECONDS)
class StreamOrderedMemoryTest {
    private ScriptedDevice device = new ScriptedDevice("sim0");
    private GpuBackend backend = device.backend();

    @AfterEach
    void shutDown() throws Exception {
        var stopped = backend.shutdown();
        device.events.forEach(ScriptedDevice.Event::reach);
        stopped.toStage().toCompletableFuture().get(10, TimeUnit.SECONDS);
        assertEquals(0, device.badFrees.get(), "bad frees: " + device.log);
    }

    @Test
    void memoryIsAllocatedInTheOrderOfTheLaneThatUsesIt() {
        GpuStream lane = backend.forkExecutors(backend.rootExecutor(), 1).get(0);
        DeviceBuffer buffer = DeviceBuffer.allocate(lane, 256);
        String id = device.nameOf(buffer.pointer());
        assertEquals(List.of(lane.name() + " alloc " + id), device.linesAbout(id));
        assertEquals(lane, buffer.lane());
        assertEquals(256, buffer.bytes());
    }

    @Test
    void releaseAfterEnqueuedWorkFreesOnThatStreamBehindTheWorkWithoutAnEventOrAWait() {
        UsedBuffer used = allocatedAndUsedOnOneLane();
        int events = device.events.size();

        used.lane.releaseAfterEnqueuedWork("scratch", used.buffer);

        assertTrue(used.buffer.isFreed());
        assertEquals(events, device.events.size(), "no marker event: the stream orders the free");
        assertFreedBehindTheUseWithoutWaiting(used);
    }

    @Test
    void bufferRetainedByWorkOnTheExecutorIsFreedThereBehindThatWork() {
        UsedBuffer used = allocatedAndUsedOnOneLane();

        backend.retainUntilComplete(used.lane, used.use, used.buffer);

        assertFreedBehindTheUseWithoutWaiting(used);
    }

    @Test
    void bufferLastUsedOnAnotherStreamIsFreedAfterAStreamWaitOnExactlyThatUsesEvent() {
        List<GpuStream> lanes = backend.forkExecutors(backend.rootExecutor(), 2);
        GpuStream producer = lanes.get(0);
        GpuStream consumer = lanes.get(1);
        DeviceBuffer buffer = DeviceBuffer.allocate(producer, 64);
        String id = device.nameOf(buffer.pointer());
        GpuCompletion written = backend.submit(producer, GpuWork.NOOP);
        backend.orderAfter(written, consumer);
        GpuCompletion read = backend.submit(consumer, GpuWork.NOOP);
        ScriptedDevice.Event readEvent = device.lastEvent();
        backend.submit(consumer, GpuWork.NOOP); // later work on the consumer: the free must not wait for it
        ScriptedDevice.Event laterEvent = device.lastEvent();

        backend.retainUntilComplete(producer, read, buffer);

        List<String> producerLines = device.log.stream().filter(l -> l.startsWith(producer.name() + " ")).toList();
        int wait = producerLines.indexOf(producer.name() + " wait " + readEvent);
        int free = producerLines.indexOf(producer.name() + " free " + id);
        assertTrue(wait >= 0 && wait < free, "the freeing stream waits on the last use's event, then frees: " + producerLines);
        assertFalse(device.log.contains(producer.name() + " wait " + laterEvent), device.log.toString());
        assertEquals(1, device.log.stream().filter(l -> l.endsWith(" free " + id)).count());
        assertFalse(read.isDone(), "the host did not wait");
    }

    @Test
    void bufferWhoseLastUseAlreadySucceededOnAnotherStreamIsFreedWithoutAWait() throws InterruptedException {
        List<GpuStream> lanes = backend.forkExecutors(backend.rootExecutor(), 2);
        UsedBuffer read = allocatedOnUsedOn(lanes.get(0), lanes.get(1));
        read.useEvent.reach();
        assertEquals(Outcome.SUCCESS, read.use.await());
        awaitDestroyed(read.useEvent);

        backend.retainUntilComplete(lanes.get(0), read.use, read.buffer);

        assertTrue(device.log.contains(lanes.get(0).name() + " free " + read.id), device.log.toString());
        assertTrue(device.log.stream().noneMatch(l -> l.contains(" wait ")), "nothing left to wait for: " + device.log);
    }

    @Test
    void aBufferIsFreedExactlyOnceWhicheverWayComesFirst() throws Exception {
        List<GpuStream> lanes = backend.forkExecutors(backend.rootExecutor(), 2);
        DeviceBuffer buffer = DeviceBuffer.allocate(lanes.get(0), 64);
        String id = device.nameOf(buffer.pointer());
        GpuCompletion first = backend.submit(lanes.get(0), GpuWork.NOOP);
        GpuCompletion second = backend.submit(lanes.get(1), GpuWork.NOOP);

        backend.retainUntilComplete(lanes.get(0), first, buffer);
        backend.retainUntilComplete(lanes.get(0), second, buffer);
        lanes.get(1).releaseAfterEnqueuedWork("again", buffer);
        buffer.close();
        device.events.forEach(ScriptedDevice.Event::reach);
        first.await();
        second.await();
        afterCallbacksRegisteredSoFar(second).get(10, TimeUnit.SECONDS);

        assertEquals(List.of(lanes.get(0).name() + " free " + id), device.log.stream().filter(l -> l.contains(" free ")).toList());
        assertThrows(IllegalStateException.class, buffer::pointer);
    }

    @Test
    void closeFreesInTheOrderOfTheLaneThatAllocated() {
        GpuStream lane = backend.forkExecutors(backend.rootExecutor(), 1).get(0);
        DeviceBuffer buffer = DeviceBuffer.allocate(lane, 64);
        String id = device.nameOf(buffer.pointer());
        buffer.close();
        buffer.close();
        assertEquals(List.of(lane.name() + " alloc " + id, lane.name() + " free " + id), device.linesAbout(id));
    }

    @Test
    void bufferRetainedByWorkThatLostTheContextIsLeakedNotFreed() throws Exception {
        UsedBuffer used = allocatedAndUsedOnOneLane();
        used.useEvent.fail(CUresult.CUDA_ERROR_ILLEGAL_ADDRESS);
        assertFalse(used.use.await().isSuccess());
        assertFalse(used.use.endProven());

        backend.retainUntilComplete(used.lane, used.use, used.buffer);
        backend.retainUntilComplete(backend.rootExecutor(), used.use, used.buffer);

        assertFalse(used.buffer.isFreed());
        assertTrue(device.log.stream().noneMatch(l -> l.endsWith(" free " + used.id)), device.log.toString());
    }

    @Test
    void memoryReleasedAfterItsStreamShutDownIsFreedOnceThatStreamHasDrained() throws Exception {
        GpuStream lane = backend.forkExecutors(backend.rootExecutor(), 1).get(0);
        DeviceBuffer buffer = DeviceBuffer.allocate(lane, 64);
        String id = device.nameOf(buffer.pointer());
        backend.submit(lane, GpuWork.NOOP);
        Completion stopped = backend.shutdownExecutor(lane);

        lane.releaseAfterEnqueuedWork("after shutdown", buffer);
        CompletableFuture<Void> released = new CompletableFuture<>();
        stopped.whenDone(o -> released.complete(null)); // runs after the release's callback: callbacks run in order

        assertTrue(device.log.stream().noneMatch(l -> l.endsWith(" free " + id)), "not before the stream drained: " + device.log);
        assertThrows(ExecutorClosedException.class, () -> DeviceBuffer.allocate(lane, 64));
        device.events.forEach(ScriptedDevice.Event::reach);
        released.get(10, TimeUnit.SECONDS);
        int destroyed = device.log.indexOf(lane.name() + " destroyed");
        int free = device.log.indexOf("device free " + id);
        assertTrue(destroyed >= 0 && destroyed < free, "freed once, on no stream of the backend, after the drain: " + device.log);
        assertEquals(1, device.log.stream().filter(l -> l.endsWith(" free " + id)).count());
    }

    @Test
    void bufferRetainedOnAShutExecutorIsFreedOnceItsCompletionIsProven() throws Exception {
        List<GpuStream> lanes = backend.forkExecutors(backend.rootExecutor(), 2);
        UsedBuffer used = allocatedOnUsedOn(lanes.get(1), lanes.get(1));
        backend.shutdownExecutor(lanes.get(0));

        backend.retainUntilComplete(lanes.get(0), used.use, used.buffer);
        var released = afterCallbacksRegisteredSoFar(used.use);
        assertTrue(device.log.stream().noneMatch(l -> l.endsWith(" free " + used.id)), device.log.toString());
        used.useEvent.reach();
        released.get(10, TimeUnit.SECONDS);

        // proven finished: freed in the allocating lane's order, which is still running
        assertEquals(1, device.log.stream().filter(l -> l.equals(lanes.get(1).name() + " free " + used.id)).count(), device.log.toString());
        assertFalse(device.log.contains(lanes.get(0).name() + " free " + used.id));
    }

    @Test
    void withoutMemoryPoolsMemoryIsAllocatedAtOnceAndFreedSynchronouslyAfterTheWorkIsProven() throws Exception {
        backend.shutdown();
        device.events.forEach(ScriptedDevice.Event::reach);
        device = new ScriptedDevice("sim-nopool", false);
        backend = device.backend();
        GpuStream lane = backend.forkExecutors(backend.rootExecutor(), 1).get(0);
        DeviceBuffer buffer = DeviceBuffer.allocate(lane, 64);
        String id = device.nameOf(buffer.pointer());
        GpuCompletion use = backend.submit(lane, GpuWork.NOOP);
        int events = device.events.size();

        lane.releaseAfterEnqueuedWork("scratch", buffer);
        assertEquals(events + 1, device.events.size(), "a marker event recorded behind the work stands in for the stream order");
        GpuCompletion other = backend.submit(lane, GpuWork.NOOP);
        DeviceBuffer retained = DeviceBuffer.allocate(lane, 64);
        String retainedId = device.nameOf(retained.pointer());
        backend.retainUntilComplete(lane, other, retained);

        assertEquals(List.of("device alloc " + id), device.linesAbout(id), "not freed before the work is proven");
        assertFalse(buffer.isFreed());
        assertFalse(retained.isFreed());
        var released = afterCallbacksRegisteredSoFar(other);
        device.events.forEach(ScriptedDevice.Event::reach);
        use.await();
        released.get(10, TimeUnit.SECONDS);
        assertEquals(List.of("device alloc " + retainedId, "device free " + retainedId), device.linesAbout(retainedId));
        awaitLine("device free " + id);
        assertEquals(List.of("device alloc " + id, "device free " + id), device.linesAbout(id));
    }

    @Test
    void optionsRefuseANegativeReleaseThresholdNamingTheKey() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> GpuOptions.DEFAULTS.withMemoryPoolReleaseThreshold(-1));
        assertTrue(e.getMessage().contains("graphlane.gpu.memory-pool-release-threshold"), e.getMessage());
        assertTrue(e.getMessage().contains("got -1"), e.getMessage());
        assertEquals(0, GpuOptions.DEFAULTS.withMemoryPoolReleaseThreshold(0).memoryPoolReleaseThresholdBytes());
        assertEquals(GpuOptions.KEEP_ALL_FREED_MEMORY, GpuOptions.DEFAULTS.memoryPoolReleaseThresholdBytes());
    }

    /** A buffer, and the still running submission on {@code lane} that uses it. */
    private record UsedBuffer(GpuStream lane, DeviceBuffer buffer, String id, GpuCompletion use, ScriptedDevice.Event useEvent) {
    }

    private UsedBuffer allocatedAndUsedOnOneLane() {
        GpuStream lane = backend.forkExecutors(backend.rootExecutor(), 1).get(0);
        return allocatedOnUsedOn(lane, lane);
    }

    private UsedBuffer allocatedOnUsedOn(GpuStream allocatedOn, GpuStream usedOn) {
        DeviceBuffer buffer = DeviceBuffer.allocate(allocatedOn, 64);
        GpuCompletion use = backend.submit(usedOn, GpuWork.NOOP);
        return new UsedBuffer(usedOn, buffer, device.nameOf(buffer.pointer()), use, device.lastEvent());
    }

    /** The free is on the use's own stream, behind its event, and neither the host nor the stream waited. */
    private void assertFreedBehindTheUseWithoutWaiting(UsedBuffer used) {
        assertFalse(used.use.isDone(), "the host did not wait for the work");
        int record = device.log.indexOf(used.lane.name() + " record " + used.useEvent);
        int free = device.log.indexOf(used.lane.name() + " free " + used.id);
        assertTrue(record >= 0 && record < free, "the free is behind the last use on the same stream: " + device.log);
        assertTrue(device.log.stream().noneMatch(l -> l.contains(" wait ")), "same stream, no wait: " + device.log);
    }

    /** A future that completes after the callbacks registered on the still running {@code c} so far. */
    private static CompletableFuture<Void> afterCallbacksRegisteredSoFar(GpuCompletion c) {
        CompletableFuture<Void> after = new CompletableFuture<>();
        c.whenDone(o -> after.complete(null));
        return after;
    }

    /** The poller destroys an event right after settling its completion, so a waiter may get there first. */
    private static void awaitDestroyed(ScriptedDevice.Event event) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!event.destroyed && System.nanoTime() < deadline) {
            Thread.onSpinWait();
        }
        assertTrue(event.destroyed, "event " + event + " destroyed once settled");
    }

    /** The marker's callback runs on the poller thread right after its completion is recorded. */
    private void awaitLine(String line) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!device.log.contains(line) && System.nanoTime() < deadline) {
            Thread.onSpinWait();
        }
        assertTrue(device.log.contains(line), device.log.toString());
    }
}
