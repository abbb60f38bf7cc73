package io.graphlane.backend.gpu;

import io.graphlane.core.backend.CrossDeviceOrderingException;
import io.graphlane.core.backend.ExecutorClosedException;
import io.graphlane.core.backend.SubmissionBackend;
import io.graphlane.core.completion.Completion;
import io.graphlane.core.completion.Completions;
import io.graphlane.core.completion.Outcome;
import io.graphlane.core.completion.SettableCompletion;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The GPU submission backend for one CUDA device. Executors are non-blocking CUDA streams; a
 * completion is an event recorded after the submitted work, settled by the device's single
 * poller thread, which also runs the callbacks; {@code orderAfter} is a stream wait on the
 * producer's event. Open one backend per device and share it through {@link #forkExecutors}: a
 * second backend on the same device is independent (its own poller), and ordering between the two
 * is refused as across devices.
 */
public final class GpuBackend implements SubmissionBackend<GpuStream, GpuCompletion, GpuWork> {
    private static final Logger LOG = LoggerFactory.getLogger(GpuBackend.class);

    private final DeviceRuntime runtime;
    private final GpuOptions options;
    private final EventPoller poller;
    private final CopyOnWriteArrayList<GpuStream> executors = new CopyOnWriteArrayList<>();
    private final AtomicInteger laneCounter = new AtomicInteger();
    private final GpuStream root;
    private volatile boolean shutdown;
    private SettableCompletion allStopped;

    GpuBackend(DeviceRuntime runtime, GpuOptions options) {
        this.runtime = Objects.requireNonNull(runtime, "runtime");
        this.options = Objects.requireNonNull(options, "options");
        this.poller = new EventPoller(runtime, options.pollerParkMicros() * 1000);
        this.poller.start();
        this.root = newExecutor("root");
    }

    /**
     * Opens device {@code options.device()}.
     *
     * @throws GpuUnavailableException if the driver is missing, shows no device, or the ordinal is out of range
     */
    public static GpuBackend open(GpuOptions options) {
        GpuDeviceInfo info = GpuDevices.select(options.device());
        GpuBackend backend = new GpuBackend(new CudaDeviceRuntime(options.device(), options.memoryPoolReleaseThresholdBytes()), options);
        LOG.info("opened {}", info);
        return backend;
    }

    /** Opens device {@code ordinal} with default options; see {@link #open(GpuOptions)}. */
    public static GpuBackend open(int ordinal) {
        return open(GpuOptions.DEFAULTS.withDevice(ordinal));
    }

    @Override
    public String deviceName() {
        return runtime.name();
    }

    /** The options this backend was opened with. */
    public GpuOptions options() {
        return options;
    }

    /** The device ordinal. */
    public int ordinal() {
        return runtime.ordinal();
    }

    @Override
    public GpuStream rootExecutor() {
        return root;
    }

    @Override
    public List<GpuStream> forkExecutors(GpuStream executor, int count) {
        checkOwned(executor, "forkExecutors");
        if (count < 0) {
            throw new IllegalArgumentException("forkExecutors: count must be >= 0, got " + count);
        }
        if (shutdown) {
            throw new ExecutorClosedException(deviceName(), "forkExecutors");
        }
        List<GpuStream> forked = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            forked.add(newExecutor("lane-" + laneCounter.getAndIncrement()));
        }
        return forked;
    }

    @Override
    public GpuCompletion submit(GpuStream executor, List<? extends GpuWork> work) {
        checkOwned(executor, "submit");
        Objects.requireNonNull(work, "work");
        return executor.submit(work);
    }

    @Override
    public void orderAfter(GpuCompletion producer, GpuStream executor) {
        checkOwned(executor, "orderAfter");
        Objects.requireNonNull(producer, "producer");
        if (producer.device() != this) {
            throw new CrossDeviceOrderingException(producer.label(), producer.device().deviceName(), executor.name(), deviceName());
        }
        executor.orderAfter(producer);
    }

    @Override
    public void retainUntilComplete(GpuStream executor, GpuCompletion completion, Object value) {
        checkOwned(executor, "retainUntilComplete");
        Objects.requireNonNull(completion, "completion");
        if (value instanceof DeviceBuffer buffer && executor.freeInStreamOrder(buffer, completion)) {
            return; // back to the memory pool in the executor's order, behind the completion's work
        }
        AtomicBoolean released = new AtomicBoolean();
        completion.whenDone(outcome -> {
            if (!released.compareAndSet(false, true)) {
                return;
            }
            if (!completion.endProven()) {
                LOG.warn("leaking {} on purpose: {} ended with a context-losing error, so its device work cannot be proven finished",
                        value, completion.label());
                return;
            }
            if (value instanceof AutoCloseable closeable) {
                try {
                    closeable.close();
                } catch (Exception e) {
                    LOG.warn("closing a value retained by {} failed", completion.label(), e);
                }
            }
        });
    }

    @Override
    public Completion shutdownExecutor(GpuStream executor) {
        checkOwned(executor, "shutdownExecutor");
        return executor.shutdown();
    }

    @Override
    public synchronized Completion shutdown() {
        if (allStopped != null) {
            return allStopped;
        }
        shutdown = true;
        SettableCompletion done = new SettableCompletion(deviceName() + " (shut down)");
        allStopped = done;
        List<Completion> each = new ArrayList<>();
        for (GpuStream s : executors) {
            each.add(s.shutdown());
        }
        Completions.whenAllDone(each, () -> poller.stopWhenIdle(() -> releaseDevice(done, each)));
        return done;
    }

    private void releaseDevice(SettableCompletion done, List<Completion> executorsStopped) {
        try {
            runtime.close();
        } finally {
            Throwable failure = null;
            for (Completion c : executorsStopped) {
                if (c.outcome().orElse(Outcome.SUCCESS) instanceof Outcome.Failed failed) {
                    failure = failed.cause();
                    break;
                }
            }
            if (failure == null) {
                done.succeed();
            } else {
                done.fail(failure);
            }
        }
    }

    /** Makes this device's context current on the calling thread; driver calls made from a new thread need it first. */
    public void makeCurrent() {
        runtime.makeCurrent();
    }

    EventPoller poller() {
        return poller;
    }

    DeviceRuntime runtime() {
        return runtime;
    }

    private GpuStream newExecutor(String lane) {
        String name = deviceName() + "/" + lane;
        GpuStream executor = new GpuStream(this, name, runtime.createStream(name));
        executors.add(executor);
        return executor;
    }

    private void checkOwned(GpuStream executor, String operation) {
        Objects.requireNonNull(executor, "executor");
        if (executor.device() != this) {
            throw new IllegalArgumentException(operation + ": executor " + executor.name() + " belongs to device "
                    + executor.device().deviceName() + ", not to " + deviceName());
        }
    }

    @Override
    public String toString() {
        return "GpuBackend(" + deviceName() + ", " + executors.size() + " executors)";
    }
}
