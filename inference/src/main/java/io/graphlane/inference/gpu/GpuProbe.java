package io.graphlane.inference.gpu;

import io.graphlane.backend.gpu.CudaLibraries;
import io.graphlane.backend.gpu.CudaLibrary;
import io.graphlane.backend.gpu.DeviceBuffer;
import io.graphlane.backend.gpu.GpuBackend;
import io.graphlane.backend.gpu.GpuStream;
import io.graphlane.backend.gpu.GpuUnavailableException;
import io.graphlane.backend.gpu.JavaCppAddresses;
import io.graphlane.checkpoint.CheckpointSource;
import io.graphlane.core.GraphlaneException;
import io.graphlane.inference.api.GenerationRequest;
import io.graphlane.inference.api.GenerationResult;
import io.graphlane.inference.model.ModelDirectory;
import io.graphlane.inference.pipeline.DecodeThroughput;
import io.graphlane.inference.pipeline.InferencePipeline;
import io.graphlane.scheduler.pipeline.PipelineSettings;
import io.graphlane.inference.weights.WeightFormat;
import io.graphlane.inference.weights.WeightPlan;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import jcuda.driver.CUevent;
import jcuda.driver.CUresult;
import jcuda.driver.JCudaDriver;
import org.bytedeco.cuda.cublas.cublasContext;
import org.bytedeco.cuda.global.cublas;
import org.bytedeco.cuda.global.cudart;
import org.bytedeco.javacpp.FloatPointer;

/**
 * The device-side figures of {@code scripts/gpu-check.sh --run} that the decode rates are set against, each printed as one
 * {@code GPUCHECK} line (a skip names what is missing and exits 0; a failure exits 1):
 * <ul>
 *   <li>{@code bandwidth}: the HBM bandwidth, from device-to-device copies of 1 GiB timed with CUDA events (each copy
 *       reads and writes its bytes, so both are counted);</li>
 *   <li>{@code gemm}: the dense BF16 GEMM peak, {@code cublasGemmEx} of 8192 × 8192 × 8192 with BF16 operands and
 *       output and F32 accumulation, timed with CUDA events;</li>
 *   <li>{@code bytes-per-token DIR [FORMAT]}: the weight bytes one decode step of one request reads from the model held
 *       on the GPU (what {@code limit_ratio} divides the bandwidth by);</li>
 *   <li>{@code figures DIR --label L [--requests 1,8,64] [--new-tokens 64] [--prefill 2048] [--bandwidth GB/s]
 *       [--gemm-tflops T]}: with the model loaded once on the GPU pipeline (one stage, micro-batches as large as the
 *       largest request count), decode tokens/s at each request count ({@link DecodeThroughput}, as {@code graphlane
 *       bench decode} measures it) with {@code limit_ratio} = tokens/s ÷ (bandwidth ÷ weight bytes per token) at one
 *       request, then prefill tokens/s of one prompt of the given length (submission to its first token, best of three
 *       after a warm-up) with its share of the GEMM peak (2 × the layer matrices' weights FLOPs per token).</li>
 * </ul>
 * Options after the command: {@code --device N}. Runs without Maven, from the bundle or the {@code graphlane} jar.
 */
public final class GpuProbe {
    private static final long COPY_BYTES = 1L << 30;
    private static final int GEMM_SIZE = 8192;

    private GpuProbe() {
    }

    public static void main(String[] args) {
        if (args.length == 0) {
            System.out.println("usage: GpuProbe bandwidth|gemm|bytes-per-token DIR [FORMAT]|figures DIR --label L [...] [--device N]");
            System.exit(2);
        }
        List<String> rest = new ArrayList<>(List.of(args));
        int device = 0;
        int at = rest.indexOf("--device");
        if (at >= 0 && at + 1 < rest.size()) {
            device = Integer.parseInt(rest.get(at + 1));
            rest.remove(at + 1);
            rest.remove(at);
        }
        String command = rest.get(0);
        String metric = switch (command) {
            case "bandwidth" -> "hbm-bandwidth-gb-per-s";
            case "gemm" -> "bf16-gemm-tflops";
            case "bytes-per-token" -> "weight-bytes-per-token";
            case "figures" -> "decode-tokens-per-second";
            default -> null;
        };
        if (metric == null) {
            System.out.println("GpuProbe: unknown command '" + command + "'; use bandwidth, gemm, bytes-per-token or figures");
            System.exit(2);
        }
        try {
            switch (command) {
                case "bandwidth" -> System.out.printf(Locale.ROOT, "GPUCHECK %s value=%.1f (device-to-device copies of %d MiB,"
                        + " read and write counted)%n", metric, bandwidthGbPerS(device), COPY_BYTES >> 20);
                case "gemm" -> System.out.printf(Locale.ROOT, "GPUCHECK %s value=%.1f (cublasGemmEx %d^3, BF16 in and out, F32"
                        + " accumulation)%n", metric, gemmTflops(device), GEMM_SIZE);
                case "bytes-per-token" -> {
                    WeightFormat format = rest.size() > 2 ? WeightFormat.parse("--weights", rest.get(2)) : WeightFormat.STORED;
                    System.out.printf(Locale.ROOT, "GPUCHECK %s value=%d (%s, weights %s on the GPU)%n", metric,
                            bytesPerToken(Path.of(rest.get(1)), format), rest.get(1), format.optionValue());
                }
                default -> figures(Path.of(rest.get(1)), options(rest.subList(2, rest.size())), device);
            }
            System.exit(0);
        } catch (GpuUnavailableException e) {
            System.out.println("GPUCHECK " + metric + " SKIPPED: " + e.getMessage());
            System.exit(0);
        } catch (Throwable t) {
            System.out.println("GPUCHECK " + metric + " FAILED: " + t);
            t.printStackTrace(System.out);
            System.exit(1);
        }
    }

    /** GB/s of device-to-device copies of 1 GiB on device {@code ordinal}, reads and writes counted. */
    public static double bandwidthGbPerS(int ordinal) {
        try (GpuBackend device = GpuBackend.open(ordinal)) {
            GpuStream stream = device.forkExecutors(device.rootExecutor(), 1).get(0);
            try (DeviceBuffer from = DeviceBuffer.allocate(stream, COPY_BYTES); DeviceBuffer to = DeviceBuffer.allocate(stream, COPY_BYTES)) {
                Runnable copy = () -> check(JCudaDriver.cuMemcpyDtoDAsync(to.pointer(), from.pointer(), COPY_BYTES, stream.cuStream()),
                        "cuMemcpyDtoDAsync");
                int iterations = 20;
                double seconds = timed(device, stream, copy, 3, iterations);
                stream.synchronize();
                return 2.0 * COPY_BYTES * iterations / seconds / 1e9;
            }
        }
    }

    /** TFLOP/s of BF16 {@code cublasGemmEx} of 8192³ with F32 accumulation on device {@code ordinal}. */
    public static double gemmTflops(int ordinal) {
        CudaLibraries.require(CudaLibrary.CUBLAS);
        try (GpuBackend device = GpuBackend.open(ordinal)) {
            GpuStream stream = device.forkExecutors(device.rootExecutor(), 1).get(0);
            long bytes = 2L * GEMM_SIZE * GEMM_SIZE;
            cublasContext blas = new cublasContext();
            try (DeviceBuffer a = DeviceBuffer.allocate(stream, bytes); DeviceBuffer b = DeviceBuffer.allocate(stream, bytes);
                 DeviceBuffer c = DeviceBuffer.allocate(stream, bytes); FloatPointer one = new FloatPointer(1f);
                 FloatPointer zero = new FloatPointer(0f)) {
                // zeros are as fast as any values for a dense GEMM; the memset only gives the operands defined contents
                check(JCudaDriver.cuMemsetD8Async(a.pointer(), (byte) 0, bytes, stream.cuStream()), "cuMemsetD8Async");
                check(JCudaDriver.cuMemsetD8Async(b.pointer(), (byte) 0, bytes, stream.cuStream()), "cuMemsetD8Async");
                device.makeCurrent();
                checkBlas(cublas.cublasCreate_v2(blas), "cublasCreate");
                try {
                    checkBlas(cublas.cublasSetStream_v2(blas, JavaCppAddresses.stream(stream.cuStream())), "cublasSetStream");
                    int n = GEMM_SIZE;
                    Runnable gemm = () -> checkBlas(cublas.cublasGemmEx(blas, cublas.CUBLAS_OP_N, cublas.CUBLAS_OP_N, n, n, n, one,
                            JavaCppAddresses.at(a.pointer(), 0), cudart.CUDA_R_16BF, n, JavaCppAddresses.at(b.pointer(), 0),
                            cudart.CUDA_R_16BF, n, zero, JavaCppAddresses.at(c.pointer(), 0), cudart.CUDA_R_16BF, n,
                            cublas.CUBLAS_COMPUTE_32F, cublas.CUBLAS_GEMM_DEFAULT), "cublasGemmEx");
                    int iterations = 20;
                    double seconds = timed(device, stream, gemm, 3, iterations);
                    return 2.0 * n * (double) n * n * iterations / seconds / 1e12;
                } finally {
                    stream.synchronize();
                    cublas.cublasDestroy_v2(blas);
                }
            }
        }
    }

    /** The weight bytes one decode step of one request reads from {@code dir} held as {@code format} on the GPU. */
    public static long bytesPerToken(Path dir, WeightFormat format) {
        ModelDirectory model = ModelDirectory.open(dir);
        try (CheckpointSource source = model.openSource(CheckpointSource.DEFAULT_MAX_OPEN_SHARDS)) {
            return WeightPlan.decodeBytesPerToken(source, model.config(), format, format != WeightFormat.F32);
        }
    }

    /** {@code --name value} pairs. */
    private static java.util.Map<String, String> options(List<String> args) {
        java.util.Map<String, String> out = new java.util.HashMap<>();
        for (int i = 0; i + 1 < args.size(); i += 2) {
            if (!args.get(i).startsWith("--")) {
                throw new GraphlaneException("GpuProbe figures: expected an option, got '" + args.get(i) + "'");
            }
            out.put(args.get(i), args.get(i + 1));
        }
        return out;
    }

    /** The decode and prefill figures of {@code dir} on device {@code ordinal}, one GPUCHECK line each (see the class comment). */
    private static void figures(Path dir, java.util.Map<String, String> o, int ordinal) throws Exception {
        String label = o.getOrDefault("--label", dir.getFileName().toString());
        int[] counts = java.util.Arrays.stream(o.getOrDefault("--requests", "1,8,64").split(",")).map(String::strip)
                .mapToInt(Integer::parseInt).toArray();
        int newTokens = Integer.parseInt(o.getOrDefault("--new-tokens", "64"));
        int prefill = Integer.parseInt(o.getOrDefault("--prefill", "2048"));
        double bandwidth = Double.parseDouble(o.getOrDefault("--bandwidth", "0"));
        double peak = Double.parseDouble(o.getOrDefault("--gemm-tflops", "0"));
        long bytesPerToken = bytesPerToken(dir, WeightFormat.STORED);
        int largest = java.util.Arrays.stream(counts).max().orElse(1);
        PipelineSettings settings = PipelineSettings.defaults(1).withMaxBatchSize(largest).withRequestLimits(Math.max(64, largest), 256);
        long loadStart = System.nanoTime();
        try (InferencePipeline pipeline = InferencePipeline.builder().model(dir).stages(1).settings(settings)
                .backend(GpuInference.device(ordinal)).build()) {
            System.out.printf(Locale.ROOT, "GPUCHECK model-load shape=%s seconds=%.1f (%s on %s)%n", label,
                    (System.nanoTime() - loadStart) / 1e9, dir, pipeline.backendDescription());
            for (int requests : counts) {
                DecodeThroughput t = DecodeThroughput.measure(pipeline, requests, newTokens, Duration.ofMinutes(5));
                String limit = "";
                if (requests == 1 && bandwidth > 0) {
                    double limitTokens = bandwidth * 1e9 / bytesPerToken;
                    limit = String.format(Locale.ROOT, " limit_ratio=%.3f limit_tokens_per_s=%.1f", t.decodeTokensPerSecond() / limitTokens,
                            limitTokens);
                }
                System.out.printf(Locale.ROOT, "GPUCHECK decode-tokens-per-second shape=%s requests=%d graphlane=%.1f%s (bf16 weights"
                        + " as stored, %d weight bytes per token; %d tokens in %.3f s after prefill)%n", label, requests,
                        t.decodeTokensPerSecond(), limit, bytesPerToken, t.decodeTokens(), t.decodeSeconds());
                System.out.flush();
            }
            if (prefill > 0) {
                double rate = prefillTokensPerSecond(pipeline, prefill);
                String share = "";
                if (peak > 0) {
                    double flopsPerToken = 2.0 * layerMatrixElements(dir);
                    share = String.format(Locale.ROOT, " gemm_share=%.3f", rate * flopsPerToken / (peak * 1e12));
                }
                System.out.printf(Locale.ROOT, "GPUCHECK prefill-tokens-per-second shape=%s tokens=%d graphlane=%.1f%s (one prompt,"
                        + " submission to its first token, best of 3)%n", label, prefill, rate, share);
            }
        }
    }

    /** The elements of every layer matrix of {@code dir} (the embedding and the head left out): a token's GEMM FLOPs are twice it. */
    static long layerMatrixElements(Path dir) {
        ModelDirectory model = ModelDirectory.open(dir);
        var whole = io.graphlane.inference.stage.StagePlan.balanced(model.config().layerCount(), 1).stages().get(0);
        long elements = 0;
        for (var e : io.graphlane.inference.llama.LlamaTensors.forStage(model.config(), whole)) {
            if (!e.vector() && e.name().startsWith("model.layers.")) {
                elements += (long) e.rows() * e.cols();
            }
        }
        return elements;
    }

    /** Prefill tokens/s of one {@code tokens}-id prompt on {@code pipeline}: best of three after a warm-up. */
    private static double prefillTokensPerSecond(InferencePipeline pipeline, int tokens) throws Exception {
        int vocabulary = pipeline.vocabularySize().orElse(2);
        List<Integer> prompt = new ArrayList<>(tokens);
        for (int i = 0; i < tokens; i++) {
            prompt.add(1 + (i * 7919) % Math.max(1, vocabulary - 1));
        }
        double best = 0;
        for (int round = 0; round < 4; round++) {
            long start = System.nanoTime();
            List<GenerationResult> results = pipeline.generateAll(List.of(GenerationRequest.greedy(prompt, 1)), Duration.ofMinutes(5));
            double seconds = (System.nanoTime() - start) / 1e9;
            if (results.get(0).generatedIds().size() != 1) {
                throw new GraphlaneException("the prefill request generated " + results.get(0).generatedIds().size() + " tokens, not 1");
            }
            if (round > 0) {
                best = Math.max(best, tokens / seconds);
            }
        }
        return best;
    }

    /** Seconds of {@code iterations} runs of {@code work} on {@code stream} between two events, after {@code warmup} runs. */
    private static double timed(GpuBackend device, GpuStream stream, Runnable work, int warmup, int iterations) {
        device.makeCurrent();
        for (int i = 0; i < warmup; i++) {
            work.run();
        }
        CUevent start = new CUevent();
        CUevent end = new CUevent();
        check(JCudaDriver.cuEventCreate(start, 0), "cuEventCreate");
        check(JCudaDriver.cuEventCreate(end, 0), "cuEventCreate");
        try {
            check(JCudaDriver.cuEventRecord(start, stream.cuStream()), "cuEventRecord");
            for (int i = 0; i < iterations; i++) {
                work.run();
            }
            check(JCudaDriver.cuEventRecord(end, stream.cuStream()), "cuEventRecord");
            check(JCudaDriver.cuEventSynchronize(end), "cuEventSynchronize");
            float[] ms = new float[1];
            check(JCudaDriver.cuEventElapsedTime(ms, start, end), "cuEventElapsedTime");
            return ms[0] / 1e3;
        } finally {
            JCudaDriver.cuEventDestroy(start);
            JCudaDriver.cuEventDestroy(end);
        }
    }

    private static void check(int result, String call) {
        if (result != CUresult.CUDA_SUCCESS) {
            throw new GraphlaneException(call + " failed: " + CUresult.stringFor(result) + " (" + result + ")");
        }
    }

    private static void checkBlas(int status, String call) {
        if (status != cublas.CUBLAS_STATUS_SUCCESS) {
            throw new GraphlaneException(call + " failed: cuBLAS status " + status);
        }
    }
}
