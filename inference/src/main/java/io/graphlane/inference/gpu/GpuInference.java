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
import io.graphlane.inference.weights.WeightFormat;
import io.graphlane.inference.weights.WeightSlots;
import org.apache.pekko.actor.typed.Behavior;

/**
 * One CUDA device as an {@link InferenceBackend}: lanes are non-blocking CUDA streams forked from the
 * device ({@link GpuBackend}), each stage lane issues {@link io.graphlane.backend.gpu.nn.GpuNeuralOps}
 * (cuBLAS + NVRTC kernels compiled once for the device), and weights are uploaded by the
 * {@link GpuParameterBackend} on the loading lane through the materialization supervisor. Weights are held as
 * {@code --weights} says, as on the CPU: {@code stored} keeps F16/BF16 matrices in their 16 bits (projections through
 * cuBLAS GemmEx with F32 accumulation), {@code bf16} rounds F32 ones to BF16 at load, {@code f32} widens 16-bit ones to
 * F32 on the device; {@code q8} is refused. Norms, biases, activations and the KV cache are F32. A stage's work runs its forward while the lane submits it, which only
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
    private final boolean sixteenBit;

    private GpuInference(GpuBackend device, GpuNeuralBackend neural, boolean sixteenBit) {
        this.device = device;
        this.neural = neural;
        this.sixteenBit = sixteenBit;
        this.parameters = sixteenBit ? GpuParameterBackend.holdingSixteenBit(device, neural.kernels())
                : new GpuParameterBackend(device, neural.kernels());
    }

    /**
     * Opens CUDA device {@code ordinal} (counted after {@code CUDA_VISIBLE_DEVICES}) and compiles its kernels; 16-bit
     * weights are held as stored.
     *
     * @throws GpuUnavailableException naming what is missing (driver, device, NVRTC, cuBLAS)
     */
    public static GpuInference open(int ordinal) {
        return open(ordinal, WeightFormat.STORED);
    }

    /**
     * Opens CUDA device {@code ordinal} for weights held as {@code weights} says: with {@link WeightFormat#F32} 16-bit
     * checkpoints are widened to F32 on the device as they upload; with the others 16-bit matrices stay 16-bit.
     *
     * @throws GpuUnavailableException naming what is missing (driver, device, NVRTC, cuBLAS)
     */
    public static GpuInference open(int ordinal, WeightFormat weights) {
        GpuBackend device = GpuBackend.open(ordinal);
        try {
            return new GpuInference(device, GpuNeuralBackend.create(device), weights != WeightFormat.F32);
        } catch (RuntimeException | Error e) {
            device.close();
            throw e;
        }
    }

    /** A factory for {@code InferencePipeline.Builder#backend}: the build opens device {@code ordinal}, holding 16-bit weights as stored. */
    public static InferenceBackend.Factory device(int ordinal) {
        return () -> open(ordinal);
    }

    /** A factory for {@code InferencePipeline.Builder#backend}: the build opens device {@code ordinal} for {@code weights}. */
    public static InferenceBackend.Factory device(int ordinal, WeightFormat weights) {
        return () -> open(ordinal, weights);
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
        return new GpuWeightSlots(sixteenBit);
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
