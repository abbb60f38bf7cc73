package io.graphlane.backend.cpu;

import io.graphlane.core.backend.AbstractSubmissionBackend;
import io.graphlane.core.completion.Completion;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The CPU submission backend: one instance is one "device"; each executor is a dedicated
 * worker thread with a FIFO queue. {@code orderAfter} puts a wait for the producer into
 * the consumer's queue, so the caller never blocks; a failed producer poisons the next
 * submission after it.
 */
public final class CpuBackend extends AbstractSubmissionBackend<CpuExecutor, CpuCompletion, CpuWork> {
    private static final System.Logger LOG = System.getLogger(CpuBackend.class.getName());
    private static final AtomicInteger DEVICES = new AtomicInteger();

    public CpuBackend() {
        this("cpu" + DEVICES.getAndIncrement());
    }

    public CpuBackend(String deviceName) {
        super(deviceName);
        openRootExecutor();
    }

    @Override
    public void retainUntilComplete(CpuExecutor executor, CpuCompletion completion, Object value) {
        checkOwned(executor, "retainUntilComplete");
        Objects.requireNonNull(completion, "completion");
        AtomicBoolean released = new AtomicBoolean();
        completion.whenDone(outcome -> {
            if (!released.compareAndSet(false, true)) {
                return;
            }
            if (value instanceof AutoCloseable closeable) {
                try {
                    closeable.close();
                } catch (Exception e) {
                    LOG.log(System.Logger.Level.WARNING, "closing a value retained by " + completion.label() + " failed", e);
                }
            }
        });
    }

    @Override
    protected CpuExecutor createExecutor(String name) {
        return new CpuExecutor(this, name);
    }

    @Override
    protected CpuBackend executorBackend(CpuExecutor executor) {
        return executor.device();
    }

    @Override
    protected String executorName(CpuExecutor executor) {
        return executor.name();
    }

    @Override
    protected CpuBackend completionBackend(CpuCompletion completion) {
        return completion.device();
    }

    @Override
    protected CpuCompletion enqueue(CpuExecutor executor, List<? extends CpuWork> work) {
        return executor.submit(work);
    }

    @Override
    protected void enqueueWait(CpuCompletion producer, CpuExecutor executor) {
        executor.orderAfter(producer);
    }

    @Override
    protected Completion closeExecutor(CpuExecutor executor) {
        return executor.shutdown();
    }

    @Override
    public String toString() {
        return "CpuBackend(" + deviceName() + ", " + executors().size() + " executors)";
    }
}
