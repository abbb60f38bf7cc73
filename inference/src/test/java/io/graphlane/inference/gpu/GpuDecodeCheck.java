package io.graphlane.inference.gpu;

import io.graphlane.backend.gpu.GpuUnavailableException;
import io.graphlane.inference.pipeline.DecodeThroughput;
import io.graphlane.inference.pipeline.InferencePipeline;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Locale;

/**
 * The decode benchmark of {@code scripts/gpu-check.sh}, run without Maven from its bundle: decode tokens/s
 * of the same model (default: the demo model) and stage count on a CUDA device at each concurrent request
 * count, and on the CPU at the largest ({@link DecodeThroughput}, as {@code graphlane bench decode} measures it),
 * one {@code GPUCHECK decode-tokens-per-second requests=R gpu=...} line per count. Arguments:
 * {@code [--device N] [--model DIR] [--stages P] [--requests R1,R2,...] [--new-tokens N]}. Exits 0 when measured
 * or skipped (no usable GPU, with the reason), 1 when a run failed.
 */
public final class GpuDecodeCheck {
    private GpuDecodeCheck() {
    }

    public static void main(String[] args) {
        int device = 0;
        Path model = null;
        int stages = 2;
        int[] requestCounts = {1, 8};
        int newTokens = 64;
        for (int i = 0; i + 1 < args.length; i += 2) {
            switch (args[i]) {
                case "--device" -> device = Integer.parseInt(args[i + 1]);
                case "--model" -> model = Path.of(args[i + 1]);
                case "--stages" -> stages = Integer.parseInt(args[i + 1]);
                case "--requests" -> requestCounts = java.util.Arrays.stream(args[i + 1].split(",")).map(String::strip)
                        .mapToInt(Integer::parseInt).toArray();
                case "--new-tokens" -> newTokens = Integer.parseInt(args[i + 1]);
                default -> throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        int largest = java.util.Arrays.stream(requestCounts).max().orElse(1);
        String what = String.format(Locale.ROOT, "%s, %d stage(s), x %d tokens", model == null ? "demo model" : model, stages, newTokens);
        try {
            for (int requests : requestCounts) {
                GpuInference gpu;
                try {
                    gpu = GpuInference.open(device);
                } catch (GpuUnavailableException e) {
                    System.out.println("GPUCHECK decode-tokens-per-second SKIPPED: " + e.getMessage());
                    System.exit(0);
                    return;
                }
                DecodeThroughput onGpu = measure(gpu, model, stages, requests, newTokens);
                String cpu = "";
                if (requests == largest) {
                    DecodeThroughput onCpu = measure(null, model, stages, requests, newTokens);
                    cpu = String.format(Locale.ROOT, " cpu=%.1f gpu/cpu=%.2fx", onCpu.decodeTokensPerSecond(),
                            onGpu.decodeTokensPerSecond() / onCpu.decodeTokensPerSecond());
                }
                System.out.printf(Locale.ROOT, "GPUCHECK decode-tokens-per-second requests=%d gpu=%.1f%s (%s; gpu %d tokens in %.3f s after"
                        + " prefill)%n", requests, onGpu.decodeTokensPerSecond(), cpu, what, onGpu.decodeTokens(), onGpu.decodeSeconds());
                System.out.flush();
            }
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
