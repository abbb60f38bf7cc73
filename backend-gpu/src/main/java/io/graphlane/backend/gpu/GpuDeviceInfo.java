package io.graphlane.backend.gpu;

/**
 * One CUDA device as the driver shows it.
 *
 * @param ordinal the index {@code --device N} selects (counted after CUDA_VISIBLE_DEVICES)
 * @param name the product name, such as {@code NVIDIA H100 80GB HBM3}
 * @param totalMemoryBytes the device memory
 * @param computeMajor the compute capability's major number
 * @param computeMinor the compute capability's minor number
 */
public record GpuDeviceInfo(int ordinal, String name, long totalMemoryBytes, int computeMajor, int computeMinor) {

    /** The NVRTC architecture option for this device, such as {@code sm_90}. */
    public String smArchitecture() {
        return "sm_" + computeMajor + computeMinor;
    }

    @Override
    public String toString() {
        return "cuda" + ordinal + ": " + name + ", " + (totalMemoryBytes >> 20) + " MiB, compute " + computeMajor + "." + computeMinor;
    }
}
