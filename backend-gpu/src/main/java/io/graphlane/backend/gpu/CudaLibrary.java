package io.graphlane.backend.gpu;

/** A native library the GPU backend loads, with the shared object a CUDA host must provide for it. */
public enum CudaLibrary {
    /** The CUDA driver API (streams, events, memory, module loading), provided by the NVIDIA driver. */
    DRIVER("the NVIDIA CUDA driver", "libcuda.so.1"),
    /** Run-time compilation of the backend's kernels, from the CUDA 12 toolkit or the nvidia-cuda-nvrtc-cu12 wheel. */
    NVRTC("the CUDA run-time compiler NVRTC", "libnvrtc.so.12"),
    /** Dense linear algebra, from the CUDA 12 toolkit or the nvidia-cublas-cu12 wheel. */
    CUBLAS("cuBLAS", "libcublas.so.12"),
    /** Collectives, from an NCCL 2 install or the nvidia-nccl-cu12 wheel (JavaCPP also needs libcudart.so.12). */
    NCCL("NCCL", "libnccl.so.2");

    private final String description;
    private final String sharedObject;

    CudaLibrary(String description, String sharedObject) {
        this.description = description;
        this.sharedObject = sharedObject;
    }

    /** What the library is, for messages. */
    public String description() {
        return description;
    }

    /** The shared object the dynamic loader must find (through ld.so.conf or LD_LIBRARY_PATH). */
    public String sharedObject() {
        return sharedObject;
    }
}
