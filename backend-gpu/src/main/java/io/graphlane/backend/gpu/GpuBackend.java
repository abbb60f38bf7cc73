package io.graphlane.backend.gpu;

import io.graphlane.core.backend.AbstractSubmissionBackend;
import io.graphlane.core.completion.Completion;
import io.graphlane.core.completion.Outcome;
import io.graphlane.core.completion.SettableCompletion;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The GPU submission backend for one CUDA device. Executors are non-blocking CUDA streams; a
 * completion is an event recorded after the submitted work, settled by the device's single
 * poller thread, which also runs the callbacks; {@code orderAfter} is a stream wait on the
 * producer's event. Open one backend per device and share it through {@link #forkExecutors}: a
 * second backend on the same device is independent (its own poller, its own name such as {@code cuda0#2}), and ordering between the two
 * is refused as across devices.
 */
public final class GpuBackend extends AbstractSubmissionBackend<GpuStream, GpuCompletion, GpuWork> {
    private static final Logger LOG = LoggerFactory.getLogger(GpuBackend.class);

    private final DeviceRuntime runtime;
    private final GpuOptions options;
    /** Idle pinned host buffers kept for reuse by device-to-host copies. */
    private static final long PINNED_POOL_IDLE_BYTES = 256L << 20;

    private final EventPoller poller;
    private final HostBufferPool<PinnedBuffer> pinnedPool;

    GpuBackend(DeviceRuntime runtime, GpuOptions options) {
        super(Objects.requireNonNull(runtime, "runtime").name());
        this.runtime = runtime;
        this.options = Objects.requireNonNull(options, "options");
        this.pinnedPool = new HostBufferPool<>(runtime.name(), bytes -> PinnedBuffer.allocate(this, bytes), PinnedBuffer::bytes,
                PinnedBuffer::close, hostFreer(runtime.name()), PINNED_POOL_IDLE_BYTES);
        this.poller = new EventPoller(runtime, options.pollerParkMicros() * 1000);
        this.poller.start();
        openRootExecutor();
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

    /** The options this backend was opened with. */
    public GpuOptions options() {
        return options;
    }

    /** The device ordinal. */
    public int ordinal() {
        return runtime.ordinal();
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
    protected GpuStream createExecutor(String name) {
        return new GpuStream(this, name, runtime.createStream(name));
    }

    @Override
    protected GpuBackend executorBackend(GpuStream executor) {
        return executor.device();
    }

    @Override
    protected String executorName(GpuStream executor) {
        return executor.name();
    }

    @Override
    protected GpuBackend completionBackend(GpuCompletion completion) {
        return completion.device();
    }

    @Override
    protected GpuCompletion enqueue(GpuStream executor, List<? extends GpuWork> work) {
        return executor.submit(work);
    }

    @Override
    protected void enqueueWait(GpuCompletion producer, GpuStream executor) {
        executor.orderAfter(producer);
    }

    @Override
    protected Completion closeExecutor(GpuStream executor) {
        return executor.shutdown();
    }

    /** Once every stream has drained: stops the poller when it is idle, then closes the pinned pool and the runtime (the primary context stays). */
    @Override
    protected void stopDevice(List<Completion> executorsStopped, SettableCompletion done) {
        poller.stopWhenIdle(() -> releaseDevice(done, executorsStopped));
    }

    private void releaseDevice(SettableCompletion done, List<Completion> executorsStopped) {
        try {
            pinnedPool.close(); // frees the idle buffers on the freer thread, not here on the poller
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

    /**
     * The pool of pinned host buffers that device-to-host copies lease from: a lease closed at a completion (on the poller
     * thread) only returns its buffer; buffers are freed on a thread of their own.
     */
    public HostBufferPool<PinnedBuffer> pinnedPool() {
        return pinnedPool;
    }

    /** One daemon thread, started on demand and ended when idle, that frees pinned buffers (cuMemFreeHost waits for the device). */
    private static java.util.concurrent.Executor hostFreer(String deviceName) {
        java.util.concurrent.ThreadPoolExecutor freer = new java.util.concurrent.ThreadPoolExecutor(0, 1, 5, java.util.concurrent.TimeUnit.SECONDS,
                new java.util.concurrent.LinkedBlockingQueue<>(), r -> {
                    Thread t = new Thread(r, "graphlane-" + deviceName + "-host-free");
                    t.setDaemon(true);
                    return t;
                });
        return freer;
    }

    /** Makes this device's context current on the calling thread; driver calls made from a new thread need it first. */
    public void makeCurrent() {
        runtime.makeCurrent();
    }

    EventPoller poller() {
        return poller;
    }

    /** The device runtime, for the memory code of this package. */
    DeviceRuntime runtime() {
        return runtime;
    }

    @Override
    public String toString() {
        return "GpuBackend(" + deviceName() + ", " + executors().size() + " executors)";
    }
}
