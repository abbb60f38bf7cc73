package io.graphlane.backend.gpu;

import java.util.List;

/**
 * A native library the GPU backend loads, with the shared objects a CUDA host must provide for it.
 * The CUDA major version N of {@code libcudart.so.N}, {@code libnvrtc.so.N} and {@code libcublas.so.N}
 * is the one this build's JavaCPP CUDA preset links against ({@link CudaBuild#cudaMajor()}: 13 by
 * default, 12 with the Maven profile {@code cuda12}).
 */
public enum CudaLibrary {
    /** The CUDA driver API (contexts, streams, events, memory, module loading), provided by the NVIDIA driver. */
    DRIVER("the NVIDIA CUDA driver", List.of("libcuda.so.1")),
    /**
     * The CUDA runtime, which JavaCPP's cuBLAS, NVRTC and NCCL glue loads first (toolkit or the nvidia-cuda-runtime wheel); JavaCPP's
     * runtime glue also links the driver's libcuda.so.1, so every JavaCPP library lists it first.
     */
    RUNTIME("the CUDA runtime", List.of("libcuda.so.1", "libcudart.so." + CudaBuild.cudaMajor())),
    /** Run-time compilation of the backend's kernels (toolkit or the nvidia-cuda-nvrtc wheel). */
    NVRTC("the CUDA run-time compiler NVRTC", List.of("libcuda.so.1", "libcudart.so." + CudaBuild.cudaMajor(),
            "libnvrtc.so." + CudaBuild.cudaMajor())),
    /** Dense linear algebra (toolkit or the nvidia-cublas wheel). */
    CUBLAS("cuBLAS", List.of("libcuda.so.1", "libcudart.so." + CudaBuild.cudaMajor(), "libcublasLt.so." + CudaBuild.cudaMajor(),
            "libcublas.so." + CudaBuild.cudaMajor())),
    /** Collectives (an NCCL 2 install or the nvidia-nccl wheel); JavaCPP's NCCL glue also needs the CUDA runtime. */
    NCCL("NCCL", List.of("libcuda.so.1", "libcudart.so." + CudaBuild.cudaMajor(), "libnccl.so.2"));

    private final String description;
    private final List<String> sharedObjects;

    CudaLibrary(String description, List<String> sharedObjects) {
        this.description = description;
        this.sharedObjects = sharedObjects;
    }

    /** What the library is, for messages. */
    public String description() {
        return description;
    }

    /** The library's own shared object (the last of {@link #sharedObjects()}). */
    public String sharedObject() {
        return sharedObjects.get(sharedObjects.size() - 1);
    }

    /** Every shared object the library needs, in the order they are loaded (dependencies first). */
    public List<String> sharedObjects() {
        return sharedObjects;
    }
}
