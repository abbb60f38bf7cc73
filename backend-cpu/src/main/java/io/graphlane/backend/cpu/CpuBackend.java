package io.graphlane.backend.cpu;

import io.graphlane.core.backend.CrossDeviceOrderingException;
import io.graphlane.core.backend.ExecutorClosedException;
import io.graphlane.core.backend.SubmissionBackend;
import io.graphlane.core.completion.Completion;
import io.graphlane.core.completion.SettableCompletion;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The CPU submission backend: one instance is one "device"; each executor is a dedicated
 * worker thread with a FIFO queue. {@code orderAfter} puts a wait for the producer into
 * the consumer's queue, so the caller never blocks; a failed producer poisons the next
 * submission after it.
 */
public final class CpuBackend implements SubmissionBackend<CpuExecutor, CpuCompletion, CpuWork> {
    private static final System.Logger LOG = System.getLogger(CpuBackend.class.getName());
    private static final AtomicInteger DEVICES = new AtomicInteger();

    private final String deviceName;
    private final CopyOnWriteArrayList<CpuExecutor> executors = new CopyOnWriteArrayList<>();
    private final AtomicInteger laneCounter = new AtomicInteger();
    private final CpuExecutor root;
    private volatile boolean shutdown;
    private volatile SettableCompletion allStopped;

    public CpuBackend() {
        this("cpu" + DEVICES.getAndIncrement());
    }

    public CpuBackend(String deviceName) {
        this.deviceName = Objects.requireNonNull(deviceName, "deviceName");
        this.root = newExecutor("root");
    }

    @Override
    public String deviceName() {
        return deviceName;
    }

    @Override
    public CpuExecutor rootExecutor() {
        return root;
    }

    /** {@inheritDoc} Serialized with {@link #shutdown()}, so no executor is forked after shutdown has closed the others. */
    @Override
    public synchronized List<CpuExecutor> forkExecutors(CpuExecutor executor, int count) {
        checkOwned(executor, "forkExecutors");
        if (count < 0) {
            throw new IllegalArgumentException("forkExecutors: count must be >= 0, got " + count);
        }
        if (shutdown) {
            throw new ExecutorClosedException(deviceName, "forkExecutors");
        }
        List<CpuExecutor> forked = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            forked.add(newExecutor("lane-" + laneCounter.getAndIncrement()));
        }
        return forked;
    }

    @Override
    public CpuCompletion submit(CpuExecutor executor, List<? extends CpuWork> work) {
        checkOwned(executor, "submit");
        Objects.requireNonNull(work, "work");
        return executor.submit(work);
    }

    @Override
    public void orderAfter(CpuCompletion producer, CpuExecutor executor) {
        checkOwned(executor, "orderAfter");
        Objects.requireNonNull(producer, "producer");
        if (producer.device() != this) {
            throw new CrossDeviceOrderingException(producer.label(), producer.device().deviceName, executor.name(), deviceName);
        }
        executor.orderAfter(producer);
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
    public Completion shutdownExecutor(CpuExecutor executor) {
        checkOwned(executor, "shutdownExecutor");
        return executor.shutdown();
    }

    @Override
    public synchronized Completion shutdown() {
        if (allStopped != null) {
            return allStopped;
        }
        shutdown = true;
        SettableCompletion done = new SettableCompletion(deviceName + " (shut down)");
        List<Completion> each = new ArrayList<>();
        for (CpuExecutor e : executors) {
            each.add(e.shutdown());
        }
        AtomicInteger remaining = new AtomicInteger(each.size());
        for (Completion c : each) {
            c.whenDone(o -> {
                if (remaining.decrementAndGet() == 0) {
                    done.succeed();
                }
            });
        }
        allStopped = done;
        return done;
    }

    private CpuExecutor newExecutor(String lane) {
        CpuExecutor executor = new CpuExecutor(this, deviceName + "/" + lane);
        executors.add(executor);
        return executor;
    }

    private void checkOwned(CpuExecutor executor, String operation) {
        Objects.requireNonNull(executor, "executor");
        if (executor.device() != this) {
            throw new IllegalArgumentException(operation + ": executor " + executor.name() + " belongs to device "
                    + executor.device().deviceName + ", not to " + deviceName);
        }
    }

    @Override
    public String toString() {
        return "CpuBackend(" + deviceName + ", " + executors.size() + " executors)";
    }
}
