package io.graphlane.backend.gpu.param;

import io.graphlane.backend.gpu.DeviceBuffer;
import io.graphlane.core.tensor.TensorSpec;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import jcuda.driver.CUdeviceptr;

/**
 * A weight resident in device memory: dense, row-major, in {@link #spec()}'s dtype (F32 for
 * weights that were F16/BF16 in the checkpoint). Handles made by {@link #share()} use the same
 * storage; the storage is freed when the last handle is closed, each handle closing once.
 */
public final class GpuWeight implements AutoCloseable {
    private final String name;
    private final TensorSpec spec;
    private final DeviceBuffer storage;
    private final AtomicInteger handles;
    private final AtomicBoolean closed = new AtomicBoolean();

    private GpuWeight(String name, TensorSpec spec, DeviceBuffer storage, AtomicInteger handles) {
        this.name = Objects.requireNonNull(name, "name");
        this.spec = Objects.requireNonNull(spec, "spec");
        this.storage = Objects.requireNonNull(storage, "storage");
        this.handles = handles;
    }

    /** The first handle on {@code storage}, which now belongs to the weight. */
    public static GpuWeight own(String name, TensorSpec spec, DeviceBuffer storage) {
        if (storage.bytes() != spec.byteSize()) {
            throw new IllegalArgumentException("weight " + name + ": " + spec + " needs " + spec.byteSize() + " bytes, storage has " + storage.bytes());
        }
        return new GpuWeight(name, spec, storage, new AtomicInteger(1));
    }

    /** Another handle on the same storage: no copy, no re-read. */
    public GpuWeight share() {
        if (closed.get()) {
            throw new IllegalStateException("weight " + name + ": cannot share a closed handle");
        }
        handles.incrementAndGet();
        return new GpuWeight(name, spec, storage, handles);
    }

    /** The checkpoint name. */
    public String name() {
        return name;
    }

    /** Dtype and shape on the device. */
    public TensorSpec spec() {
        return spec;
    }

    /** The device address of the first element. */
    public CUdeviceptr pointer() {
        return storage.pointer();
    }

    /** The storage (shared by every handle). */
    public DeviceBuffer storage() {
        return storage;
    }

    /** True when both handles designate the same device memory. */
    public boolean sharesStorageWith(GpuWeight other) {
        return storage == other.storage;
    }

    @Override
    public void close() {
        if (closed.compareAndSet(false, true) && handles.decrementAndGet() == 0) {
            storage.close();
        }
    }

    @Override
    public String toString() {
        return "GpuWeight(" + name + " " + spec + " on " + storage.device().deviceName() + ")";
    }
}
