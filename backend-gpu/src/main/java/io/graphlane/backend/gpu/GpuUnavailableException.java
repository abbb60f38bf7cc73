package io.graphlane.backend.gpu;

import io.graphlane.core.GraphlaneException;

/**
 * The GPU backend cannot run here: no NVIDIA driver, no CUDA device, a device index out of
 * range, or a CUDA library (libcuda, libnvrtc, libcublas, libnccl) that does not load. The
 * message names what is missing and suggests {@code --backend cpu}; the cause is the first
 * failure seen, also when the same library is touched again later.
 */
public final class GpuUnavailableException extends GraphlaneException {
    private static final long serialVersionUID = 1L;

    /** The hint every message ends with. */
    static final String HINT = "run with --backend cpu, or on a host with an NVIDIA driver and the CUDA " + CudaBuild.cudaMajor()
            + " libraries (the toolkit, or the nvidia wheels of python3)";

    GpuUnavailableException(String message, Throwable cause) {
        super(message, cause);
    }

    GpuUnavailableException(String message) {
        super(message);
    }
}
