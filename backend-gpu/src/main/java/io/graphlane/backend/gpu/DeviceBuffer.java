package io.graphlane.backend.gpu;

import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;
import jcuda.driver.CUdeviceptr;

/**
 * Device memory of a fixed size, allocated on the lane that first uses it. With memory pools
 * (every device since Pascal on a CUDA 11.2+ driver) it comes from CUDA's stream-ordered allocator:
 * the allocation is ordered on that lane's stream, and the memory goes back to the pool in stream
 * order, behind the last work that uses it, without the host or the device ever waiting for it.
 *
 * <p>Freed exactly once, whichever way comes first (a second free is a no-op):
 * <ul>
 *   <li>{@link GpuStream#releaseAfterEnqueuedWork} frees it on that stream, after the work enqueued there so far;</li>
 *   <li>{@code retainUntilComplete(executor, completion, buffer)} frees it on the executor's stream, after the
 *       completion's work: when that work ran on another stream, the executor's stream first waits on its event,
 *       which also holds back the executor's later work, so retain on the lane that ran the work. Memory retained
 *       by work already known to have lost the CUDA context is leaked and reported instead (a free enqueued
 *       before the loss is lost with the context); on a shut executor it is freed by {@link #close()} once the
 *       completion is proven;</li>
 *   <li>{@link #close()}, for a caller that proved every use finished, frees it in the allocating lane's order
 *       (after the allocation), or once that lane has drained if it was shut down.</li>
 * </ul>
 * On a device without memory pools each of these waits for the work's completion on the host and
 * frees with {@code cuMemFree}, as before stream-ordered allocation existed.
 */
public final class DeviceBuffer implements AutoCloseable {
    private final GpuStream lane;
    private final CUdeviceptr pointer;
    private final long bytes;
    private final AtomicBoolean freed = new AtomicBoolean();

    private DeviceBuffer(GpuStream lane, CUdeviceptr pointer, long bytes) {
        this.lane = lane;
        this.pointer = pointer;
        this.bytes = bytes;
    }

    /**
     * Allocates {@code bytes} of device memory (at least one byte is reserved) in {@code lane}'s order: work
     * enqueued on that lane from now on may use it, work on other lanes once ordered after such work.
     *
     * @throws io.graphlane.core.backend.ExecutorClosedException if the lane is shut down
     */
    public static DeviceBuffer allocate(GpuStream lane, long bytes) {
        Objects.requireNonNull(lane, "lane");
        if (bytes < 0) {
            throw new IllegalArgumentException("device allocation on " + lane.name() + ": bytes must be >= 0, got " + bytes);
        }
        return new DeviceBuffer(lane, lane.allocate(bytes), bytes);
    }

    /** The device pointer; valid until the buffer is freed. */
    public CUdeviceptr pointer() {
        if (freed.get()) {
            throw new IllegalStateException("device buffer of " + bytes + " bytes on " + lane.name() + " was already freed");
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
        return lane.device();
    }

    /** The lane this memory was allocated on. */
    public GpuStream lane() {
        return lane;
    }

    /** True once freed (for a stream-ordered free: once the free is enqueued). */
    public boolean isFreed() {
        return freed.get();
    }

    /** Marks the buffer freed and returns its pointer to free, or null when it was freed before. */
    CUdeviceptr claimForFree() {
        return freed.compareAndSet(false, true) ? pointer : null;
    }

    /**
     * Frees the memory; the caller must have proven that every work using it has finished (a retained
     * value's completion, a synchronized stream). Never waits on the host when the device has memory pools.
     */
    @Override
    public void close() {
        CUdeviceptr p = claimForFree();
        if (p != null) {
            lane.freeAllocation(p);
        }
    }

    @Override
    public String toString() {
        return "DeviceBuffer(" + bytes + " bytes on " + lane.name() + (freed.get() ? ", freed" : "") + ")";
    }
}
