package io.graphlane.backend.gpu;

import io.graphlane.core.completion.Outcome;
import io.graphlane.core.completion.PoisonedPreconditionException;
import io.graphlane.core.completion.SettableCompletion;
import java.util.List;
import jcuda.driver.CUresult;

/**
 * The exact completion of one GPU submission: a CUDA event recorded after its work, settled by
 * the device's one poller thread. Its outcome accounts for the producers it was ordered after:
 * if one of them failed, this completion fails with a {@link PoisonedPreconditionException}
 * naming the root producer, whatever the device reported for this work.
 */
public final class GpuCompletion extends SettableCompletion {
    private final GpuBackend device;
    private final GpuStream stream;
    private final EventHandle event;
    private final List<GpuCompletion> preconditions;
    private final Throwable enqueueFailure;
    private final Object eventLock = new Object();
    private boolean eventDestroyed;
    private volatile boolean proven = true;

    private GpuCompletion(GpuBackend device, GpuStream stream, String label, EventHandle event, List<GpuCompletion> preconditions,
                          Throwable enqueueFailure) {
        super(label);
        this.device = device;
        this.stream = stream;
        this.event = event;
        this.preconditions = List.copyOf(preconditions);
        this.enqueueFailure = enqueueFailure;
    }

    /** A completion that the poller settles once {@code event}, recorded on {@code stream}, is reached. */
    static GpuCompletion pending(GpuBackend device, GpuStream stream, String label, EventHandle event, List<GpuCompletion> preconditions,
                                 Throwable enqueueFailure) {
        return new GpuCompletion(device, stream, label, event, preconditions, enqueueFailure);
    }

    /** A completion already recorded: an empty submission, or one refused before anything was enqueued. */
    static GpuCompletion settled(GpuBackend device, String label, Throwable failure) {
        GpuCompletion c = new GpuCompletion(device, null, label, null, List.of(), null);
        if (failure == null) {
            c.succeed();
        } else {
            c.fail(failure);
        }
        return c;
    }

    /** The backend (device) whose poller settles this completion. */
    GpuBackend device() {
        return device;
    }

    /** The stream whose event marks the end of this work; null for a completion settled at submission. */
    GpuStream stream() {
        return stream;
    }

    /** The event that marks the end of this work; null for a completion settled at submission. */
    EventHandle event() {
        return event;
    }

    /**
     * Makes {@code stream} wait for this work's event; false (nothing enqueued) when the event was
     * already reached and destroyed, in which case this completion's outcome is recorded.
     */
    boolean enqueueWait(StreamHandle stream) {
        synchronized (eventLock) {
            if (event == null || eventDestroyed) {
                return false;
            }
            stream.waitFor(event);
            return true;
        }
    }

    /** Frees the event once; called by the poller after {@link #settle} recorded the outcome. */
    void destroyEvent() {
        synchronized (eventLock) {
            if (event != null && !eventDestroyed) {
                eventDestroyed = true;
                event.destroy();
            }
        }
    }

    /**
     * The failure this work is already known on the host to end with, or null: its outcome when settled failed, else
     * the failure of enqueueing it (the poller records it only once the event is reached, after the work queued in
     * front). A consumer ordered after such a producer is refused at submission, so that it never runs.
     */
    Throwable knownFailure() {
        if (outcome().orElse(null) instanceof Outcome.Failed failed) {
            return failed.cause();
        }
        return enqueueFailure;
    }

    /**
     * False when the device reported a context-losing error for this work: its end cannot be
     * proven, so memory it retained must be leaked rather than freed.
     */
    public boolean endProven() {
        return proven;
    }

    /**
     * Records the outcome for the device's {@code result} of the event query. Returns false (and
     * records nothing) while a precondition is still unsettled, so that a poisoned consumer is
     * always attributed to its producer rather than to a device error that the producer caused.
     */
    boolean settle(int result) {
        for (GpuCompletion producer : preconditions) {
            if (!producer.isDone()) {
                return false;
            }
        }
        if (result != CUresult.CUDA_SUCCESS && CudaErrors.isSticky(result)) {
            proven = false;
        }
        for (GpuCompletion producer : preconditions) {
            if (producer.outcome().orElseThrow() instanceof Outcome.Failed failed) {
                fail(PoisonedPreconditionException.of(label(), producer.label(), failed.cause()));
                return true;
            }
        }
        if (result != CUresult.CUDA_SUCCESS) {
            fail(new CudaException(label(), "asynchronous work", result));
        } else if (enqueueFailure != null) {
            fail(enqueueFailure);
        } else {
            succeed();
        }
        return true;
    }
}
