package io.graphlane.backend.gpu;

import io.graphlane.core.backend.ExecutorClosedException;
import io.graphlane.core.completion.Outcome;
import io.graphlane.core.completion.PoisonedPreconditionException;
import io.graphlane.core.completion.SettableCompletion;
import java.util.ArrayList;
import java.util.List;
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
        GpuCompletion completion = GpuCompletion.pending(device, name + " (" + what + ")", stream.record(), List.of(), null);
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
     * value freed at teardown, after the lane stopped).
     */
    public void releaseAfterEnqueuedWork(String what, AutoCloseable value) {
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

    GpuCompletion submit(List<? extends GpuWork> work) {
        synchronized (lock) {
            if (closed) {
                throw new ExecutorClosedException(name, "submit");
            }
            String label = name + "#" + sequence++;
            List<GpuCompletion> preconditions = pendingPreconditions;
            pendingPreconditions = new ArrayList<>(2);
            for (GpuCompletion producer : preconditions) {
                if (producer.outcome().orElse(null) instanceof Outcome.Failed failed) {
                    // Known failed before anything was enqueued: refuse the work outright.
                    return GpuCompletion.settled(device, label, PoisonedPreconditionException.of(label, producer.label(), failed.cause()));
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
            GpuCompletion completion = GpuCompletion.pending(device, label, event, preconditions, enqueueFailure);
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
            GpuCompletion drained = GpuCompletion.pending(device, name + " (draining)", last, List.of(), null);
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
