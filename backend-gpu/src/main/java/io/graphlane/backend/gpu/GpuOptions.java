package io.graphlane.backend.gpu;

/**
 * Settings of one GPU backend; the defaults are those of {@code graphlane.gpu} in this
 * module's {@code reference.conf}, where every key is documented.
 *
 * @param device the device ordinal ({@code --device N}), counted after CUDA_VISIBLE_DEVICES
 * @param pollerParkMicros how long the device's poller parks between sweeps while work is pending
 * @param stagingChunkBytes the size of one pinned staging buffer for checkpoint uploads
 * @param stagingBuffers how many pinned staging buffers take turns (2 = double buffering)
 */
public record GpuOptions(int device, long pollerParkMicros, long stagingChunkBytes, int stagingBuffers) {

    /** The defaults of reference.conf on device 0. */
    public static final GpuOptions DEFAULTS = new GpuOptions(0, 20, 16L << 20, 2);

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
    }

    /** The same settings on another device. */
    public GpuOptions withDevice(int ordinal) {
        return new GpuOptions(ordinal, pollerParkMicros, stagingChunkBytes, stagingBuffers);
    }

    /** The same settings with other staging buffers. */
    public GpuOptions withStaging(long chunkBytes, int buffers) {
        return new GpuOptions(device, pollerParkMicros, chunkBytes, buffers);
    }
}
