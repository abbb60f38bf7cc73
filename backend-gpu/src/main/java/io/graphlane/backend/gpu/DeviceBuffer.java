package io.graphlane.backend.gpu;

import java.util.concurrent.atomic.AtomicBoolean;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.JCudaDriver;

/**
 * Device memory of a fixed size. Closing frees it exactly once (a second close is a no-op);
 * callers free it through {@code retainUntilComplete} so that it outlives every kernel reading it.
 */
public final class DeviceBuffer implements AutoCloseable {
    private final GpuBackend device;
    private final CUdeviceptr pointer;
    private final long bytes;
    private final AtomicBoolean freed = new AtomicBoolean();

    private DeviceBuffer(GpuBackend device, CUdeviceptr pointer, long bytes) {
        this.device = device;
        this.pointer = pointer;
        this.bytes = bytes;
    }

    /** Allocates {@code bytes} of device memory (at least one byte is reserved). */
    public static DeviceBuffer allocate(GpuBackend device, long bytes) {
        if (bytes < 0) {
            throw new IllegalArgumentException("device allocation on " + device.deviceName() + ": bytes must be >= 0, got " + bytes);
        }
        device.makeCurrent();
        CUdeviceptr p = new CUdeviceptr();
        CudaErrors.check(JCudaDriver.cuMemAlloc(p, Math.max(1, bytes)), "cuMemAlloc(" + bytes + " bytes)", device.deviceName());
        return new DeviceBuffer(device, p, bytes);
    }

    /** The device pointer; valid until {@link #close()}. */
    public CUdeviceptr pointer() {
        if (freed.get()) {
            throw new IllegalStateException("device buffer of " + bytes + " bytes on " + device.deviceName() + " was already freed");
        }
        return pointer;
    }

    /** The pointer {@code offset} bytes in, checked against the size. */
    public CUdeviceptr pointer(long offset) {
        if (offset < 0 || offset > bytes) {
            throw new IndexOutOfBoundsException("offset " + offset + " outside device buffer of " + bytes + " bytes");
        }
        return pointer().withByteOffset(offset);
    }

    /** The size in bytes. */
    public long bytes() {
        return bytes;
    }

    /** The device that holds this memory. */
    public GpuBackend device() {
        return device;
    }

    /** True once freed. */
    public boolean isFreed() {
        return freed.get();
    }

    @Override
    public void close() {
        if (freed.compareAndSet(false, true)) {
            device.makeCurrent();
            CudaErrors.check(JCudaDriver.cuMemFree(pointer), "cuMemFree", device.deviceName());
        }
    }

    @Override
    public String toString() {
        return "DeviceBuffer(" + bytes + " bytes on " + device.deviceName() + (freed.get() ? ", freed" : "") + ")";
    }
}
