package io.graphlane.inference.gpu;

import io.graphlane.backend.gpu.GpuUnavailableException;
import io.graphlane.inference.pipeline.DecodeThroughput;
import io.graphlane.inference.pipeline.InferencePipeline;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Locale;

/**
 * The decode benchmark of {@code scripts/gpu-check.sh}, run without Maven from its bundle: decode tokens/s
 * of the same model (default: the demo model), stage count and requests on a CUDA device and on the CPU
 * ({@link DecodeThroughput}, as {@code graphlane bench decode} measures it), printed as one {@code GPUCHECK}
 * line. Arguments: {@code [--device N] [--model DIR] [--stages P] [--requests R] [--new-tokens N]}. Exits 0
 * when measured or skipped (no usable GPU, with the reason), 1 when a run failed.
 */
public final class GpuDecodeCheck {
    private GpuDecodeCheck() {
    }

    public static void main(String[] args) {
        int device = 0;
        Path model = null;
        int stages = 2;
        int requests = 8;
        int newTokens = 64;
        for (int i = 0; i + 1 < args.length; i += 2) {
            switch (args[i]) {
                case "--device" -> device = Integer.parseInt(args[i + 1]);
                case "--model" -> model = Path.of(args[i + 1]);
                case "--stages" -> stages = Integer.parseInt(args[i + 1]);
                case "--requests" -> requests = Integer.parseInt(args[i + 1]);
                case "--new-tokens" -> newTokens = Integer.parseInt(args[i + 1]);
                default -> throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        String what = String.format(Locale.ROOT, "%s, %d stage(s), %d requests x %d tokens", model == null ? "demo model" : model,
                stages, requests, newTokens);
        try {
            GpuInference gpu;
            try {
                gpu = GpuInference.open(device);
            } catch (GpuUnavailableException e) {
                System.out.println("GPUCHECK decode-tokens-per-second SKIPPED: " + e.getMessage());
                System.exit(0);
                return;
            }
            DecodeThroughput onGpu = measure(gpu, model, stages, requests, newTokens);
            DecodeThroughput onCpu = measure(null, model, stages, requests, newTokens);
            System.out.printf(Locale.ROOT, "GPUCHECK decode-tokens-per-second gpu=%.1f cpu=%.1f gpu/cpu=%.2fx (%s; gpu %d tokens in %.3f s, "
                            + "cpu %d tokens in %.3f s after prefill)%n", onGpu.decodeTokensPerSecond(), onCpu.decodeTokensPerSecond(),
                    onGpu.decodeTokensPerSecond() / onCpu.decodeTokensPerSecond(), what, onGpu.decodeTokens(), onGpu.decodeSeconds(),
                    onCpu.decodeTokens(), onCpu.decodeSeconds());
            System.exit(0);
        } catch (Throwable t) {
            System.out.println("GPUCHECK decode-tokens-per-second FAILED (" + what + "): " + t);
            t.printStackTrace(System.out);
            System.exit(1);
        }
    }

    /** One backend's decode rate; {@code gpu} is owned (and closed) by the pipeline, null means the CPU. */
    private static DecodeThroughput measure(GpuInference gpu, Path model, int stages, int requests, int newTokens) throws Exception {
        InferencePipeline.Builder builder = InferencePipeline.builder().stages(stages);
        builder = model == null ? builder.demoModel() : builder.model(model);
        if (gpu != null) {
            builder = builder.backend(() -> gpu);
        }
        try (InferencePipeline pipeline = builder.build()) {
            return DecodeThroughput.measure(pipeline, requests, newTokens, Duration.ofMinutes(3));
        } finally {
            if (gpu != null) {
                gpu.close(); // idempotent
            }
        }
    }
}
