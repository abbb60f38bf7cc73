package io.graphlane.backend.gpu;

import io.graphlane.core.backend.ExecutorClosedException;
import io.graphlane.core.completion.Outcome;
import io.graphlane.core.completion.PoisonedPreconditionException;
import io.graphlane.core.completion.SettableCompletion;
import java.util.ArrayList;
import java.util.List;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUstream;

/**
 * One GPU lane: a CUDA stream that does not synchronize with the legacy default stream. Work
 * runs in submission order; {@code orderAfter} enqueues a stream wait on the producer's event,
 * so the caller never blocks.
 */
public final class GpuStream {
    private final GpuBackend device;
    private final String name;
    private final StreamHandle stream;
    private final SettableCompletion stopped;
    private final Object lock = new Object();
    private List<GpuCompletion> pendingPreconditions = new ArrayList<>(2);
    private long sequence;
    private boolean closed;

    GpuStream(GpuBackend device, String name, StreamHandle stream) {
        this.device = device;
        this.name = name;
        this.stream = stream;
        this.stopped = new SettableCompletion(name + " (stopped)");
    }

    /** The lane's name, {@code <device>/<lane>}. */
    public String name() {
        return name;
    }

    /** The JCuda stream that work items enqueue on. */
    public CUstream cuStream() {
        return stream.cuStream();
    }

    /** The backend (device) this stream belongs to. */
    public GpuBackend backend() {
        return device;
    }

    GpuBackend device() {
        return device;
    }

    /**
     * Records an event after everything enqueued on this stream so far, including work being
     * enqueued right now by the caller, and returns its completion. For work items that must tie
     * a release to the exact end of what they enqueued (a scratch buffer, a freed tensor).
     */
    public GpuCompletion marker(String what) {
        device.makeCurrent();
        GpuCompletion completion = GpuCompletion.pending(device, this, name + " (" + what + ")", stream.record(), List.of(), null);
        device.poller().watch(completion);
        return completion;
    }

    /**
     * Blocks the calling thread until everything enqueued on this stream so far has finished; for host
     * read-backs and teardown only. Once the stream is shut down it waits for the drain instead (the
     * CUDA stream itself is destroyed then).
     */
    public void synchronize() {
        synchronized (lock) {
            if (closed) {
                stopped.awaitUninterruptibly();
                return;
            }
        }
        device.makeCurrent();
        CudaErrors.check(jcuda.driver.JCudaDriver.cuStreamSynchronize(stream.cuStream()), "cuStreamSynchronize", name);
    }

    /**
     * Closes {@code value} once everything enqueued on this stream so far has finished: at the exact
     * completion of an event recorded now, or, once the stream is shut down, when it has drained (a
     * value freed at teardown, after the lane stopped). A {@link DeviceBuffer} of this device goes
     * back to the memory pool in this stream's order instead, right behind that work, without an
     * event or a wait on the host (on a device without memory pools it takes the event's way too).
     */
    public void releaseAfterEnqueuedWork(String what, AutoCloseable value) {
        if (value instanceof DeviceBuffer buffer && freeInStreamOrder(buffer, null)) {
            return;
        }
        synchronized (lock) {
            if (!closed) {
                device.retainUntilComplete(this, marker(what), value);
                return;
            }
        }
        stopped.whenDone(outcome -> {
            try {
                value.close();
            } catch (Exception e) {
                org.slf4j.LoggerFactory.getLogger(GpuStream.class).warn("closing {} after {} drained failed", what, name, e);
            }
        });
    }

    /**
     * Allocates {@code bytes} of device memory for work on this lane: from the memory pool in this
     * stream's order (usable by later work on this lane, and by other lanes once ordered after it),
     * or at once on a device without memory pools.
     */
    CUdeviceptr allocate(long bytes) {
        synchronized (lock) {
            if (closed) {
                throw new ExecutorClosedException(name, "allocate " + bytes + " bytes of device memory");
            }
            device.makeCurrent();
            DeviceRuntime runtime = device.runtime();
            return runtime.streamOrderedMemory() ? stream.allocate(bytes) : runtime.allocate(bytes);
        }
    }

    /**
     * Frees {@code buffer} in this stream's order: after everything enqueued on it so far and, when
     * {@code lastUse} (null: none beyond that) ran on another stream of this device, after a stream
     * wait on {@code lastUse}'s event (which orders this stream's later work after {@code lastUse}
     * too: free on the stream that ran the work to avoid that); the host never waits. Frees at most once, whichever way the
     * buffer is freed first. Returns false, and frees nothing, when that order cannot be set up here:
     * the device has no memory pools, this stream is shut down, {@code lastUse} or the buffer belongs
     * to another device, or {@code lastUse} ended with an error that lost the CUDA context (its end
     * cannot be proven, so the buffer must be leaked); the caller then frees it by other means once
     * {@code lastUse} is proven finished.
     */
    boolean freeInStreamOrder(DeviceBuffer buffer, GpuCompletion lastUse) {
        if (!device.runtime().streamOrderedMemory() || buffer.device() != device) {
            return false;
        }
        if (buffer.isFreed()) {
            return true; // freed once already: nothing to order
        }
        if (lastUse != null && (lastUse.device() != device || lastUse.isDone() && !lastUse.endProven())) {
            return false;
        }
        synchronized (lock) {
            if (closed) {
                return false;
            }
            device.makeCurrent();
            if (lastUse != null && lastUse.stream() != this && !lastUse.enqueueWait(stream) && !lastUse.endProven()) {
                return false; // reached and settled meanwhile, with a context-losing error
            }
            // enqueueWait false otherwise: the event was reached and its outcome recorded, nothing to wait for.
            CUdeviceptr pointer = buffer.claimForFree();
            if (pointer != null) {
                stream.free(pointer);
            }
            return true;
        }
    }

    /**
     * Frees memory that was allocated on this lane and whose every use is proven finished: in this
     * stream's order while it runs (so after the allocation), once it has drained when it is shut down.
     */
    void freeAllocation(CUdeviceptr pointer) {
        DeviceRuntime runtime = device.runtime();
        if (runtime.streamOrderedMemory()) {
            synchronized (lock) {
                if (!closed) {
                    device.makeCurrent();
                    stream.free(pointer);
                    return;
                }
            }
            stopped.whenDone(outcome -> {
                device.makeCurrent();
                runtime.free(pointer);
            });
            return;
        }
        device.makeCurrent();
        runtime.free(pointer);
    }

    GpuCompletion submit(List<? extends GpuWork> work) {
        synchronized (lock) {
            if (closed) {
                throw new ExecutorClosedException(name, "submit");
            }
            String label = name + "#" + sequence++;
            List<GpuCompletion> preconditions = pendingPreconditions;
            pendingPreconditions = new ArrayList<>(2);
            for (GpuCompletion producer : preconditions) {
                Throwable failure = producer.knownFailure();
                if (failure != null) {
                    // Known failed before anything was enqueued: refuse the work outright. The device-side wait on the
                    // producer's event would pass (its event is recorded either way), so the work would run.
                    return GpuCompletion.settled(device, label, PoisonedPreconditionException.of(label, producer.label(), failure));
                }
            }
            if (work.isEmpty() && preconditions.isEmpty()) {
                return GpuCompletion.settled(device, label, null);
            }
            device.makeCurrent();
            Throwable enqueueFailure = null;
            for (GpuWork item : work) {
                try {
                    item.enqueue(this);
                } catch (RuntimeException | LinkageError e) {
                    enqueueFailure = e;
                    break;
                }
            }
            EventHandle event = stream.record();
            GpuCompletion completion = GpuCompletion.pending(device, this, label, event, preconditions, enqueueFailure);
            device.poller().watch(completion);
            return completion;
        }
    }

    void orderAfter(GpuCompletion producer) {
        synchronized (lock) {
            if (closed) {
                throw new ExecutorClosedException(name, "orderAfter");
            }
            if (producer.outcome().map(Outcome::isSuccess).orElse(false)) {
                return; // already proven: the order holds without a device-side wait
            }
            device.makeCurrent();
            producer.enqueueWait(stream);
            pendingPreconditions.add(producer);
        }
    }

    SettableCompletion shutdown() {
        synchronized (lock) {
            if (closed) {
                return stopped;
            }
            closed = true;
            device.makeCurrent();
            EventHandle last = stream.record();
            GpuCompletion drained = GpuCompletion.pending(device, this, name + " (draining)", last, List.of(), null);
            drained.whenDone(outcome -> {
                try {
                    stream.destroy();
                } finally {
                    stopped.record(outcome);
                }
            });
            device.poller().watch(drained);
            return stopped;
        }
    }

    @Override
    public String toString() {
        return name;
    }
}
