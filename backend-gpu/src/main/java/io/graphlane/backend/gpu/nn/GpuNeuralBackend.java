package io.graphlane.backend.gpu.nn;

import io.graphlane.backend.gpu.GpuBackend;
import io.graphlane.backend.gpu.GpuStream;
import io.graphlane.core.nn.NeuralBackend;
import io.graphlane.core.nn.NeuralOps;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/** {@link NeuralBackend} over one GPU: kernels compiled once for the device, one {@link GpuNeuralOps} (and cuBLAS handle) per lane. */
public final class GpuNeuralBackend implements NeuralBackend<GpuStream, GpuMatrix>, AutoCloseable {
    private final GpuBackend device;
    private final GpuKernels kernels;
    private final Map<GpuStream, GpuNeuralOps> perLane = new ConcurrentHashMap<>();

    private GpuNeuralBackend(GpuBackend device, GpuKernels kernels) {
        this.device = device;
        this.kernels = kernels;
    }

    /**
     * Compiles the kernels for {@code device}.
     *
     * @throws io.graphlane.backend.gpu.GpuUnavailableException if NVRTC or cuBLAS does not load
     */
    public static GpuNeuralBackend create(GpuBackend device) {
        io.graphlane.backend.gpu.CudaLibraries.require(io.graphlane.backend.gpu.CudaLibrary.CUBLAS);
        return new GpuNeuralBackend(device, GpuKernels.compile(device));
    }

    /** The kernels compiled for the device (the parameter backend widens F16/BF16 with them too). */
    public GpuKernels kernels() {
        return kernels;
    }

    @Override
    public NeuralOps<GpuMatrix> ops(GpuStream executor) {
        if (executor.backend() != device) {
            throw new IllegalArgumentException("ops: " + executor.name() + " is not a lane of " + device.deviceName());
        }
        return perLane.computeIfAbsent(executor, s -> new GpuNeuralOps(s, kernels));
    }

    /** Destroys every lane's cuBLAS handle once its work has finished. */
    @Override
    public void close() {
        perLane.values().forEach(GpuNeuralOps::close);
        perLane.clear();
    }
}
