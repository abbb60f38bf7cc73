package io.graphlane.backend.gpu;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.concurrent.atomic.AtomicBoolean;
import jcuda.Pointer;
import jcuda.driver.JCudaDriver;

/**
 * Page-locked host memory, the source or destination of asynchronous copies. Closing frees it
 * exactly once; callers free it through {@code retainUntilComplete} after the copies using it.
 */
public final class PinnedBuffer implements AutoCloseable {
    private final GpuBackend device;
    private final Pointer pointer;
    private final long bytes;
    private final ByteBuffer view;
    private final AtomicBoolean freed = new AtomicBoolean();

    private PinnedBuffer(GpuBackend device, Pointer pointer, long bytes) {
        this.device = device;
        this.pointer = pointer;
        this.bytes = bytes;
        this.view = bytes == 0 ? ByteBuffer.allocate(0) : pointer.getByteBuffer(0, bytes).order(ByteOrder.LITTLE_ENDIAN);
    }

    /** Allocates {@code bytes} (at most 2 GiB - 1, so one ByteBuffer views it) of pinned host memory. */
    public static PinnedBuffer allocate(GpuBackend device, long bytes) {
        if (bytes < 0 || bytes > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("pinned allocation on " + device.deviceName() + ": bytes must be in [0, "
                    + Integer.MAX_VALUE + "], got " + bytes);
        }
        device.makeCurrent();
        Pointer p = new Pointer();
        CudaErrors.check(JCudaDriver.cuMemHostAlloc(p, Math.max(1, bytes), 0), "cuMemHostAlloc(" + bytes + " bytes)", device.deviceName());
        return new PinnedBuffer(device, p, bytes);
    }

    /** The host pointer, for asynchronous copies. */
    public Pointer pointer() {
        checkLive();
        return pointer;
    }

    /** A little-endian view of the whole buffer (position 0, limit = size); do not keep it past close. */
    public ByteBuffer buffer() {
        checkLive();
        return view.duplicate().order(ByteOrder.LITTLE_ENDIAN).clear();
    }

    /** The size in bytes. */
    public long bytes() {
        return bytes;
    }

    /** True once freed. */
    public boolean isFreed() {
        return freed.get();
    }

    @Override
    public void close() {
        if (freed.compareAndSet(false, true)) {
            device.makeCurrent();
            CudaErrors.check(JCudaDriver.cuMemFreeHost(pointer), "cuMemFreeHost", device.deviceName());
        }
    }

    private void checkLive() {
        if (freed.get()) {
            throw new IllegalStateException("pinned buffer of " + bytes + " bytes on " + device.deviceName() + " was already freed");
        }
    }
}
