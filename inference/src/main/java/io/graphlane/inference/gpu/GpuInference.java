package io.graphlane.inference.gpu;

import io.graphlane.actors.materialize.MaterializationSettings;
import io.graphlane.actors.materialize.MaterializationSupervisor;
import io.graphlane.backend.gpu.GpuBackend;
import io.graphlane.backend.gpu.GpuCompletion;
import io.graphlane.backend.gpu.GpuStream;
import io.graphlane.backend.gpu.GpuUnavailableException;
import io.graphlane.backend.gpu.GpuWork;
import io.graphlane.backend.gpu.nn.GpuMatrix;
import io.graphlane.backend.gpu.nn.GpuNeuralBackend;
import io.graphlane.backend.gpu.param.GpuParameter;
import io.graphlane.backend.gpu.param.GpuParameterBackend;
import io.graphlane.core.nn.NeuralOps;
import io.graphlane.inference.backend.InferenceBackend;
import io.graphlane.inference.weights.WeightSlots;
import org.apache.pekko.actor.typed.Behavior;

/**
 * One CUDA device as an {@link InferenceBackend}: lanes are non-blocking CUDA streams forked from the
 * device ({@link GpuBackend}), each stage lane issues {@link io.graphlane.backend.gpu.nn.GpuNeuralOps}
 * (cuBLAS + NVRTC kernels compiled once for the device), and weights are uploaded by the
 * {@link GpuParameterBackend} on the loading lane through the materialization supervisor (F16/BF16
 * widened to F32 on the device). A stage's work runs its forward while the lane submits it, which only
 * enqueues; the last stage's logits come back by an asynchronous copy read after the step's completion,
 * so no lane actor waits for the device.
 *
 * <p>Refuses: tensor parallelism (CPU only). Opening throws {@link GpuUnavailableException}, one line
 * naming what is missing and suggesting {@code --backend cpu}, where there is no driver, device, NVRTC or
 * cuBLAS.
 */
public final class GpuInference implements InferenceBackend<GpuMatrix, GpuStream, GpuCompletion, GpuWork, GpuParameter> {
    private final GpuBackend device;
    private final GpuNeuralBackend neural;
    private final GpuParameterBackend parameters;

    private GpuInference(GpuBackend device, GpuNeuralBackend neural) {
        this.device = device;
        this.neural = neural;
        this.parameters = new GpuParameterBackend(device, neural.kernels());
    }

    /**
     * Opens CUDA device {@code ordinal} (counted after {@code CUDA_VISIBLE_DEVICES}) and compiles its kernels.
     *
     * @throws GpuUnavailableException naming what is missing (driver, device, NVRTC, cuBLAS)
     */
    public static GpuInference open(int ordinal) {
        GpuBackend device = GpuBackend.open(ordinal);
        try {
            return new GpuInference(device, GpuNeuralBackend.create(device));
        } catch (RuntimeException | Error e) {
            device.close();
            throw e;
        }
    }

    /** A factory for {@code InferencePipeline.Builder#backend}: the build opens device {@code ordinal}. */
    public static InferenceBackend.Factory device(int ordinal) {
        return () -> open(ordinal);
    }

    @Override
    public String description() {
        return device.deviceName();
    }

    @Override
    public GpuBackend device() {
        return device;
    }

    @Override
    public NeuralOps<GpuMatrix> ops(GpuStream lane) {
        return neural.ops(lane);
    }

    @Override
    public GpuWork work(Runnable body) {
        return stream -> body.run();
    }

    @Override
    public Behavior<MaterializationSupervisor.Command<GpuParameter>> supervisor(GpuStream loadingLane, MaterializationSettings settings) {
        return MaterializationSupervisor.create(parameters, loadingLane, settings);
    }

    @Override
    public WeightSlots<GpuParameter, GpuMatrix> weightSlots() {
        return new GpuWeightSlots();
    }

    /**
     * The device memory free now, as the driver reports it ({@code cuMemGetInfo}): the caches live in device memory.
     * Memory the stream-ordered pool keeps for reuse is not counted as free.
     */
    @Override
    public long freeCacheMemory() {
        device.makeCurrent();
        long[] free = new long[1];
        long[] total = new long[1];
        int status = jcuda.driver.JCudaDriver.cuMemGetInfo(free, total);
        if (status != jcuda.driver.CUresult.CUDA_SUCCESS) {
            throw new io.graphlane.core.GraphlaneException("cuMemGetInfo on " + device.deviceName() + " failed: "
                    + jcuda.driver.CUresult.stringFor(status));
        }
        return free[0];
    }

    /** Destroys the lanes' cuBLAS handles, stops the staging thread, then shuts the device down. */
    @Override
    public void close() {
        try {
            neural.close();
        } finally {
            try {
                parameters.close();
            } finally {
                device.close();
            }
        }
    }
}
