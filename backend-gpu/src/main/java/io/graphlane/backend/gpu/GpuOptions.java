package io.graphlane.backend.gpu;

/**
 * Settings of one GPU backend; the defaults are those of {@code graphlane.gpu} in this
 * module's {@code reference.conf}, where every key is documented.
 *
 * @param device the device ordinal ({@code --device N}), counted after CUDA_VISIBLE_DEVICES
 * @param pollerParkMicros how long the device's poller parks between sweeps while work is pending
 * @param stagingChunkBytes the size of one pinned staging buffer for checkpoint uploads
 * @param stagingBuffers how many pinned staging buffers take turns (2 = double buffering)
 * @param memoryPoolReleaseThresholdBytes how many bytes of freed device memory the device's default memory pool keeps
 *        reserved for reuse instead of handing them back to the driver at the next synchronization
 *        ({@link #KEEP_ALL_FREED_MEMORY}: all of it; 0: none, CUDA's own default)
 */
public record GpuOptions(int device, long pollerParkMicros, long stagingChunkBytes, int stagingBuffers,
                         long memoryPoolReleaseThresholdBytes) {

    /** A release threshold that keeps every freed byte in the pool for reuse (the default). */
    public static final long KEEP_ALL_FREED_MEMORY = Long.MAX_VALUE;

    /** The defaults of reference.conf on device 0. */
    public static final GpuOptions DEFAULTS = new GpuOptions(0, 20, 16L << 20, 2, KEEP_ALL_FREED_MEMORY);

    public GpuOptions {
        if (device < 0) {
            throw new IllegalArgumentException("graphlane.gpu.device (--device) must be >= 0, got " + device);
        }
        if (pollerParkMicros < 1 || pollerParkMicros > 10_000) {
            throw new IllegalArgumentException("graphlane.gpu.poller-park must be between 1us and 10ms, got " + pollerParkMicros + "us");
        }
        if (stagingChunkBytes < 4096 || stagingChunkBytes % 4096 != 0) {
            throw new IllegalArgumentException("graphlane.gpu.staging-chunk-bytes must be a positive multiple of 4096, got " + stagingChunkBytes);
        }
        if (stagingBuffers < 1 || stagingBuffers > 8) {
            throw new IllegalArgumentException("graphlane.gpu.staging-buffers must be between 1 and 8, got " + stagingBuffers);
        }
        if (memoryPoolReleaseThresholdBytes < 0) {
            throw new IllegalArgumentException("graphlane.gpu.memory-pool-release-threshold must be >= 0 bytes (0 hands freed memory"
                    + " back to the driver at every synchronization, \"unlimited\" keeps all of it), got " + memoryPoolReleaseThresholdBytes);
        }
    }

    /** The same settings on another device. */
    public GpuOptions withDevice(int ordinal) {
        return new GpuOptions(ordinal, pollerParkMicros, stagingChunkBytes, stagingBuffers, memoryPoolReleaseThresholdBytes);
    }

    /** The same settings with other staging buffers. */
    public GpuOptions withStaging(long chunkBytes, int buffers) {
        return new GpuOptions(device, pollerParkMicros, chunkBytes, buffers, memoryPoolReleaseThresholdBytes);
    }

    /** The same settings with another release threshold for the device's memory pool. */
    public GpuOptions withMemoryPoolReleaseThreshold(long bytes) {
        return new GpuOptions(device, pollerParkMicros, stagingChunkBytes, stagingBuffers, bytes);
    }
}
