package io.graphlane.cli;

import io.graphlane.backend.gpu.GpuDevices;
import io.graphlane.core.GraphlaneException;
import io.graphlane.inference.gpu.GpuInference;
import io.graphlane.inference.pipeline.InferencePipeline;
import io.graphlane.inference.weights.WeightFormat;
import picocli.CommandLine.Option;

/**
 * Where {@code serve} runs its stages: {@code --backend cpu|gpu}, {@code --device N} and {@code --kv-memory-fraction F}.
 * The GPU goes through the same engine as the CPU ({@link InferencePipeline} over {@link GpuInference}, as
 * {@code run --backend gpu}); the device is opened by the pipeline's build, which closes it again if the build fails.
 */
public final class ServeBackendOptions {

    @Option(names = "--backend", paramLabel = "cpu|gpu", defaultValue = "cpu", description = "cpu (default) runs the stages on CPU"
            + " lanes; gpu on CUDA streams of --device, weights held as --weights says (stored: F16/BF16 stay 16-bit on the device).")
    String backend = "cpu";

    @Option(names = "--device", paramLabel = "N", defaultValue = "0", description = "gpu: the CUDA device, counted after"
            + " CUDA_VISIBLE_DEVICES (default ${DEFAULT-VALUE}).")
    int device;

    @Option(names = "--kv-memory-fraction", paramLabel = "F", description = "With --kv-budget auto: the share in (0, 1] of what"
            + " the caches may still take once the weights are loaded (on a GPU its free device memory) that the KV budget"
            + " takes, as vLLM's gpu-memory-utilization bounds its cache (default 0.5).")
    Double kvMemoryFraction;

    /** True for {@code --backend gpu}. */
    boolean gpu() {
        return backend().equals("gpu");
    }

    /**
     * Sets {@code builder}'s backend and KV-memory fraction.
     *
     * @throws GraphlaneException naming the option for a backend that is neither, a negative device, a fraction outside
     *                            (0, 1], or tensor parallelism on the GPU (naming how many devices this host shows; where
     *                            it shows none, naming what is missing)
     */
    InferencePipeline.Builder configure(InferencePipeline.Builder builder, int tensorParallel, WeightFormat weights) {
        if (kvMemoryFraction != null) {
            builder = builder.kvMemoryFraction(kvMemoryFraction);
        }
        switch (backend()) {
            case "cpu":
                return builder;
            case "gpu":
                if (device < 0) {
                    throw new GraphlaneException("--device must be >= 0, got " + device);
                }
                if (weights == WeightFormat.Q8) {
                    throw new GraphlaneException("--weights q8 is not supported with --backend gpu: the GPU holds F32, BF16 or F16"
                            + " weights; use --weights stored, bf16 or f32");
                }
                if (tensorParallel > 1) {
                    throw tensorParallelRefusal(tensorParallel, GpuDevices.list().size());
                }
                return builder.backend(GpuInference.device(device, weights));
            default:
                throw new GraphlaneException("--backend must be cpu or gpu, got '" + backend + "'");
        }
    }

    /** The refusal of {@code --tensor-parallel T --backend gpu} on a host that shows {@code visible} CUDA devices. */
    static GraphlaneException tensorParallelRefusal(int tensorParallel, int visible) {
        String devices = visible + " visible CUDA device" + (visible == 1 ? "" : "s");
        if (tensorParallel > visible) {
            return new GraphlaneException("--tensor-parallel " + tensorParallel + " --backend gpu needs " + tensorParallel
                    + " CUDA devices, this host has " + devices + "; use --tensor-parallel 1, or --backend cpu");
        }
        return new GraphlaneException("--tensor-parallel " + tensorParallel + " is not supported with --backend gpu yet (this host"
                + " has " + devices + "): GPU stages run unsharded; use --tensor-parallel 1, or --backend cpu for shards");
    }

    private String backend() {
        return backend == null ? "cpu" : backend.trim().toLowerCase(java.util.Locale.ROOT);
    }
}
