package io.graphlane.backend.gpu.nn;

import io.graphlane.backend.gpu.GpuBackend;
import io.graphlane.backend.gpu.GpuDevices;
import io.graphlane.backend.gpu.GpuStream;
import io.graphlane.core.GraphlaneException;
import java.util.HashMap;
import java.util.Map;
import jcuda.Pointer;
import jcuda.driver.CUfunction;
import jcuda.driver.CUmodule;
import jcuda.driver.CUresult;
import jcuda.driver.JCudaDriver;

/** The compiled kernels of {@link KernelSources#llama()} on one device: compiled once, launched on any of its streams. */
public final class GpuKernels {
    private final GpuBackend device;
    private final Map<String, CUfunction> functions = new HashMap<>();

    private GpuKernels(GpuBackend device, Map<String, CUfunction> functions) {
        this.device = device;
        this.functions.putAll(functions);
    }

    /** Compiles the kernels for {@code device} with NVRTC and loads them into its context. */
    public static GpuKernels compile(GpuBackend device) {
        byte[] cubin = NvrtcCompiler.compile("graphlane_llama.cu", KernelSources.llama(), GpuDevices.select(device.ordinal()));
        device.makeCurrent();
        CUmodule module = new CUmodule();
        check(JCudaDriver.cuModuleLoadData(module, cubin), "cuModuleLoadData", device.deviceName());
        Map<String, CUfunction> functions = new HashMap<>();
        for (String name : KernelSources.KERNELS) {
            CUfunction f = new CUfunction();
            check(JCudaDriver.cuModuleGetFunction(f, module, name), "cuModuleGetFunction(" + name + ")", device.deviceName());
            functions.put(name, f);
        }
        return new GpuKernels(device, functions);
    }

    /** The device these kernels were loaded on. */
    public GpuBackend device() {
        return device;
    }

    /**
     * Enqueues {@code kernel} on {@code stream} with a 1-D grid; {@code args} are JCuda pointers to each argument. Makes the
     * device's context current first: the calling thread (a lane actor's dispatcher thread) may never have used this device.
     */
    public void launch(GpuStream stream, String kernel, int grid, int block, int sharedBytes, Pointer... args) {
        CUfunction f = functions.get(kernel);
        if (f == null) {
            throw new IllegalArgumentException("no kernel " + kernel + "; known: " + KernelSources.KERNELS);
        }
        device.makeCurrent();
        check(JCudaDriver.cuLaunchKernel(f, grid, 1, 1, block, 1, 1, sharedBytes, stream.cuStream(), Pointer.to(args), null),
                "cuLaunchKernel(" + kernel + ")", stream.name());
    }

    private static void check(int result, String call, String where) {
        if (result != CUresult.CUDA_SUCCESS) {
            throw new GraphlaneException(call + " failed on " + where + ": " + CUresult.stringFor(result) + " (" + result + ")");
        }
    }
}
