package io.graphlane.cli.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.graphlane.backend.cpu.nn.CpuNeuralBackend;
import io.graphlane.backend.cpu.nn.WeightStreamProbe;
import io.graphlane.cli.DeviceWeightsOptions;
import io.graphlane.cli.GraphlaneCli;
import io.graphlane.core.GraphlaneException;
import io.graphlane.inference.backend.InferenceBackend;
import io.graphlane.inference.gpu.GpuInference;
import io.graphlane.inference.pipeline.DecodeBound;
import io.graphlane.inference.pipeline.DecodeThroughput;
import io.graphlane.inference.pipeline.InferencePipeline;
import io.graphlane.inference.pipeline.PrefillLatency;
import io.graphlane.inference.demo.DemoModel;
import io.graphlane.inference.model.ModelDirectory;
import io.graphlane.inference.weights.WeightFormat;
import io.graphlane.inference.weights.WeightPlan;
import io.graphlane.checkpoint.CheckpointSource;
import java.io.PrintWriter;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code graphlane bench decode}: decode tokens/s of the same model, requests and stage count on each
 * backend named by {@code --backends} (by default the GPU against the CPU baseline), in one run. Decode is
 * timed from the moment every request has its first token (all prompts prefilled) to the last token, and
 * counts the tokens generated in that window.
 */
@Command(name = "decode", mixinStandardHelpOptions = true,
        description = {"Decode tokens/s of R concurrent greedy requests on each backend (default: gpu, then the cpu baseline),",
            "same model (default: the demo model), same stages; the first backend's rate is compared with the last's."})
public final class DecodeBench implements java.util.concurrent.Callable<Integer> {

    @Option(names = "--backends", paramLabel = "LIST", split = ",", defaultValue = "gpu,cpu",
            description = "Backends to measure, in order: cpu, gpu (default ${DEFAULT-VALUE}).")
    List<String> backends;

    @Option(names = "--device", paramLabel = "N", defaultValue = "0", description = "gpu: the CUDA device (default ${DEFAULT-VALUE}).")
    int device;

    @Option(names = "--model", paramLabel = "MODEL", description = "A Hugging Face model directory, a GGUF file, or a directory holding exactly one (default: the demo model).")
    Path model;

    @Option(names = "--stages", paramLabel = "P", defaultValue = "2", description = "Pipeline stages (default ${DEFAULT-VALUE}).")
    int stages;

    @Option(names = "--requests", paramLabel = "R", defaultValue = "8", description = "Concurrent requests (default ${DEFAULT-VALUE}).")
    int requests;

    @Option(names = "--new-tokens", paramLabel = "N", defaultValue = "64", description = "Tokens generated per request (default ${DEFAULT-VALUE}).")
    int newTokens;

    @Option(names = "--weights", paramLabel = "LIST", split = ",", defaultValue = "stored",
            description = "Weight formats to measure on each backend, in order: stored, f32, bf16, q8 (default ${DEFAULT-VALUE};"
                    + " q8 is CPU only). An F32 model is rounded to BF16 or quantized at load.")
    List<String> weights;

    @Option(names = "--rounds", paramLabel = "N", defaultValue = "1",
            description = {"Measure each backend and format N times on the same pipeline and report the median round by decode",
                "tokens/s (default ${DEFAULT-VALUE}); every round's figure is printed too. For a noisy machine."})
    int rounds;

    @Option(names = "--warmup-seconds", paramLabel = "W", defaultValue = "3",
            description = {"Untimed rounds first on each pipeline, at least one and for at least W seconds, so the JIT has compiled",
                "the decode step before the timed rounds (default ${DEFAULT-VALUE}; 0 = one short warm-up, as a cold service sees)."})
    double warmupSeconds;

    @Option(names = "--in-process",
            description = {"Measure every backend and format in this JVM. By default, when more than one is named, each runs in a JVM",
                "of its own with this one's options: in one JVM they share the JIT's profile of the Vector API, and a later",
                "format ran up to 2x slower than on its own."})
    boolean inProcess;

    @Option(names = "--prompt-tokens", paramLabel = "N", defaultValue = "512",
            description = {"After the decode rounds, the time to first token of one request of an N-token prompt, and its prompt",
                "tokens/s (default ${DEFAULT-VALUE}; 0 skips it)."})
    int promptTokens;

    @Option(names = "--json", description = "Print one JSON object.")
    boolean json;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @CommandLine.Mixin
    DeviceWeightsOptions deviceWeights = new DeviceWeightsOptions();

    /** The measured model's name, once a pipeline was built. */
    private String modelName;

    /**
     * One backend's figures: the median round's {@code throughput}, every timed round's decode tokens/s in order and the
     * untimed rounds before them; {@code roundLimits} the bound measured right after each timed round, in the same order,
     * or null where no bound was measured (the GPU); {@code kernelShares} each timed round's share of the lanes' time spent
     * inside the Java kernels' calls, or null where not measured (the GPU, or the CPU without the Vector API); {@code pid}
     * the JVM that measured it.
     */
    record Rate(String backend, String weights, String device, DecodeThroughput throughput, double[] roundRates, int warmupRounds,
                List<Limit> roundLimits, double[] kernelShares, long pid, Memory memory, PrefillLatency prefill) {
        double decodePerSecond() {
            return throughput.decodeTokensPerSecond();
        }

        /**
         * The rounds' median bound: the median bandwidth and the median tokens/s limit over the rounds (with one round,
         * its own), or null without a bound.
         */
        Limit limit() {
            if (roundLimits == null) {
                return null;
            }
            Limit any = roundLimits.get(0);
            return new Limit(median(roundLimits.stream().mapToDouble(Limit::bandwidthGbPerS).toArray()), any.threads(),
                    any.weightBytesPerToken(), median(roundLimits.stream().mapToDouble(Limit::tokensPerSecond).toArray()),
                    median(roundLimits.stream().mapToDouble(Limit::kernelGbPerS).toArray()), any.blasGbPerS());
        }

        /** Each round's decode tokens/s over the bound measured right after it, in round order. */
        double[] roundLimitRatios() {
            double[] ratios = new double[roundRates.length];
            for (int i = 0; i < ratios.length; i++) {
                ratios[i] = roundRates[i] / roundLimits.get(i).tokensPerSecond();
            }
            return ratios;
        }

        /**
         * The median over the rounds of each round's ratio to the bound measured right after it: a slow or fast phase of a
         * shared machine moves a round and its own probe together, where one probe for all the rounds would not.
         */
        double limitRatio() {
            return median(roundLimitRatios());
        }
    }

    /**
     * The process's memory after the rounds: {@code rssBytes} resident now and {@code peakRssBytes} at most ({@code VmRSS},
     * {@code VmHWM} of /proc/self/status; -1 where there is none), against {@code weightBytes}, the bytes the weights take as
     * held, and {@code kvBytes}, the KV cache the measured requests' positions take.
     */
    record Memory(long rssBytes, long peakRssBytes, long weightBytes, long kvBytes) {
        /** Resident bytes over the weights' and the KV cache's. */
        double ratio() {
            return rssBytes / (double) (weightBytes + kvBytes);
        }

        /** Now, for a run whose weights take {@code weightBytes} and whose caches take {@code kvBytes}. */
        static Memory now(long weightBytes, long kvBytes) {
            long rss = -1;
            long peak = -1;
            try {
                for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                    if (line.startsWith("VmRSS:")) {
                        rss = kib(line);
                    } else if (line.startsWith("VmHWM:")) {
                        peak = kib(line);
                    }
                }
            } catch (java.io.IOException | RuntimeException e) {
                // no procfs (not Linux): reported as -1
            }
            return new Memory(rss, peak, weightBytes, kvBytes);
        }

        private static long kib(String line) {
            return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
        }
    }

    /** The middle value of {@code values} (the upper middle of an even count, as the median round is chosen). */
    static double median(double[] values) {
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        return sorted[sorted.length / 2];
    }

    /**
     * The weight-streaming bound of a CPU run, measured in the same run (the decode kernel once after each timed round,
     * OpenBLAS once after the last; the faster counts): {@code bandwidthGbPerS} of a one-row
     * product over a weight-sized matrix with {@code threads} OpenBLAS threads, the bytes a decode step reads,
     * and the tokens/s the run's requests could reach at most (the R-row product's rate, so a compute-bound
     * product lowers it); {@code kernelGbPerS} and {@code blasGbPerS} the one-row product's rate through the decode kernel
     * and through OpenBLAS alone ({@code bandwidthGbPerS} is the faster), so a ratio short of 1 can be split into the
     * kernel's own streaming rate and what a decode step spends outside its products.
     */
    record Limit(double bandwidthGbPerS, int threads, long weightBytesPerToken, double tokensPerSecond, double kernelGbPerS,
                 double blasGbPerS) {
    }

    @Override
    public Integer call() throws Exception {
        if (rounds < 1 || rounds > 100) {
            throw new GraphlaneException("--rounds must be in [1, 100], got " + rounds);
        }
        if (!(warmupSeconds >= 0 && warmupSeconds <= 600)) {
            throw new GraphlaneException("--warmup-seconds must be in [0, 600], got " + warmupSeconds);
        }
        if (stages < 1 || requests < 1 || newTokens < 2) {
            throw new GraphlaneException("--stages and --requests must be >= 1 and --new-tokens >= 2; got " + stages + ", " + requests
                    + ", " + newTokens);
        }
        if (promptTokens < 0) {
            throw new GraphlaneException("--prompt-tokens must be >= 0, got " + promptTokens);
        }
        if (backends.isEmpty()) {
            throw new GraphlaneException("--backends names no backend; give cpu, gpu or both");
        }
        for (String b : backends) {
            if (!b.equals("cpu") && !b.equals("gpu")) {
                throw new GraphlaneException("--backends: '" + b + "' is not cpu or gpu");
            }
        }
        List<WeightFormat> formats = new ArrayList<>();
        for (String w : weights) {
            formats.add(WeightFormat.parse("--weights", w));
        }
        PrintWriter out = spec.commandLine().getOut();
        boolean fork = !inProcess && backends.size() * formats.size() > 1;
        if (fork && backends.contains("gpu")) {
            GpuInference.open(device).close(); // an unusable GPU ends the run with its one line before anything is measured
        }
        List<Rate> rates = new ArrayList<>();
        for (String b : backends) {
            for (WeightFormat format : formats) {
                Rate rate;
                if (fork) {
                    ForkedRun run = measureForked(b, format);
                    if (run.status() != 0) {
                        return run.status();
                    }
                    rate = run.rate();
                } else {
                    rate = measure(b, format);
                }
                print(rate, out);
                rates.add(rate);
            }
        }
        Rate first = rates.get(0);
        Rate last = rates.get(rates.size() - 1);
        if (json) {
            ObjectNode root = new ObjectMapper().createObjectNode();
            root.put("model", modelName);
            root.put("stages", stages);
            root.put("requests", requests);
            root.put("new_tokens", newTokens);
            root.put("rounds", rounds);
            root.put("warmup_seconds", warmupSeconds);
            ArrayNode results = root.putArray("results");
            for (Rate r : rates) {
                DecodeThroughput t = r.throughput();
                ObjectNode result = results.addObject().put("backend", r.backend()).put("weights", r.weights()).put("device", r.device())
                        .put("decode_tokens_per_s", r.decodePerSecond()).put("decode_tokens", t.decodeTokens()).put("decode_s", t.decodeSeconds())
                        .put("tokens", t.tokens()).put("wall_s", t.wallSeconds());
                result.put("warmup_rounds", r.warmupRounds()).put("pid", r.pid());
                Memory m = r.memory();
                result.put("rss_bytes", m.rssBytes()).put("peak_rss_bytes", m.peakRssBytes()).put("weight_bytes", m.weightBytes())
                        .put("kv_bytes", m.kvBytes()).put("rss_ratio", m.ratio());
                if (r.prefill() != null) {
                    result.put("prompt_tokens", r.prefill().promptTokens()).put("ttft_s", r.prefill().ttftSeconds())
                            .put("prefill_tokens_per_s", r.prefill().promptTokensPerSecond());
                }
                ArrayNode perRound = result.putArray("decode_tokens_per_s_rounds");
                for (double rate : r.roundRates()) {
                    perRound.add(rate);
                }
                if (r.kernelShares() != null) {
                    result.put("kernel_call_share", median(r.kernelShares()));
                    ArrayNode shares = result.putArray("kernel_call_share_rounds");
                    for (double share : r.kernelShares()) {
                        shares.add(share);
                    }
                }
                if (r.roundLimits() != null) {
                    Limit limit = r.limit();
                    result.put("bandwidth_gb_per_s", limit.bandwidthGbPerS()).put("blas_threads", limit.threads())
                            .put("weight_bytes_per_token", limit.weightBytesPerToken())
                            .put("limit_tokens_per_s", limit.tokensPerSecond()).put("limit_ratio", r.limitRatio())
                            .put("kernel_bandwidth_gb_per_s", limit.kernelGbPerS()).put("blas_bandwidth_gb_per_s", limit.blasGbPerS());
                    ArrayNode bandwidths = result.putArray("bandwidth_gb_per_s_rounds");
                    ArrayNode limits = result.putArray("limit_tokens_per_s_rounds");
                    ArrayNode kernels = result.putArray("kernel_bandwidth_gb_per_s_rounds");
                    for (Limit l : r.roundLimits()) {
                        bandwidths.add(l.bandwidthGbPerS());
                        limits.add(l.tokensPerSecond());
                        kernels.add(l.kernelGbPerS());
                    }
                    ArrayNode ratios = result.putArray("limit_ratio_rounds");
                    for (double ratio : r.roundLimitRatios()) {
                        ratios.add(ratio);
                    }
                }
            }
            if (rates.size() > 1) {
                root.put("ratio_first_vs_last", first.decodePerSecond() / last.decodePerSecond());
            }
            out.println(root);
        } else if (rates.size() > 1) {
            out.printf(Locale.ROOT, "decode tokens/s %s %s / %s %s = %.2fx (%s, %d stage(s), %d requests x %d tokens)%n", first.backend(),
                    first.weights(), last.backend(), last.weights(), first.decodePerSecond() / last.decodePerSecond(), modelName, stages, requests, newTokens);
        }
        out.flush();
        return 0;
    }

    /** Decode tokens/s of the model held in {@code format} on backend {@code b}, in this JVM. */
    private Rate measure(String b, WeightFormat format) throws Exception {
        // The GPU is opened first, so an unusable one ends the run with one line before anything is measured.
        InferenceBackend<?, ?, ?, ?, ?> opened = b.equals("gpu") ? GpuInference.open(device, format) : null;
        try {
            InferencePipeline.Builder builder = InferencePipeline.builder().stages(stages).weights(format);
            builder = model == null ? builder.demoModel() : builder.model(model);
            builder = deviceWeights.apply(builder, line -> spec.commandLine().getErr().println("graphlane bench decode: " + line));
            if (opened != null) {
                builder = builder.backend(() -> opened);
            }
            try (InferencePipeline pipeline = builder.build()) {
                modelName = pipeline.modelName();
                int warmupRounds = 0;
                long warmupEnd = System.nanoTime() + (long) (warmupSeconds * 1e9);
                if (warmupSeconds > 0) {
                    do {
                        DecodeThroughput.measure(pipeline, requests, newTokens, Duration.ofHours(1));
                        warmupRounds++;
                    } while (System.nanoTime() < warmupEnd);
                }
                // a model of a short context gets the longest prompt it takes
                int prompt = Math.min(promptTokens, pipeline.maxSequenceLength() - 1);
                PrefillLatency prefill = prompt > 0 ? PrefillLatency.measure(pipeline, prompt, Duration.ofHours(1)) : null;
                long positions = Math.max((long) requests * (4 + newTokens), prompt + 1L);
                // before the bound's probe allocates a matrix of the weights' size: the process as a service holds it
                Memory memory = Memory.now(heldWeightBytes(format), positions * pipeline.kvBudget().bytesPerPosition());
                List<DecodeThroughput> measured = new ArrayList<>();
                List<Limit> limits = b.equals("cpu") ? new ArrayList<>() : null;
                DecodeBound bound = limits == null ? null : weightBytes(format);
                WeightStreamProbe probe = limits == null ? null : new WeightStreamProbe(bound.weightBytesPerToken());
                List<double[]> kernelSeconds = new ArrayList<>();
                double[] kernelShares = b.equals("cpu") && CpuNeuralBackend.simdBits() > 0 ? new double[rounds] : null;
                for (int round = 0; round < rounds; round++) {
                    long kernelNanos = CpuNeuralBackend.kernelCallNanos();
                    long start = System.nanoTime();
                    measured.add(DecodeThroughput.measure(pipeline, requests, newTokens, Duration.ofHours(1)));
                    if (kernelShares != null) {
                        // every lane's time in the round, its prompt's prefill included: stages lanes for the round's wall time
                        kernelShares[round] = (CpuNeuralBackend.kernelCallNanos() - kernelNanos) / ((double) (System.nanoTime() - start) * stages);
                    }
                    if (probe != null) {
                        kernelSeconds.add(probeSeconds(probe, false));
                    }
                }
                if (probe != null) {
                    // OpenBLAS once, after the last round: its threads spin for a while after a call
                    double[] blas = probeSeconds(probe, true);
                    for (double[] kernel : kernelSeconds) {
                        limits.add(limit(probe, bound, kernel[0], blas[0], Math.min(kernel[1], blas[1])));
                    }
                }
                double[] roundRates = measured.stream().mapToDouble(DecodeThroughput::decodeTokensPerSecond).toArray();
                List<DecodeThroughput> byRate = new ArrayList<>(measured);
                byRate.sort(Comparator.comparingDouble(DecodeThroughput::decodeTokensPerSecond));
                DecodeThroughput throughput = byRate.get(byRate.size() / 2);
                return new Rate(b, format.optionValue(), pipeline.backendDescription(), throughput, roundRates, warmupRounds, limits, kernelShares,
                        ProcessHandle.current().pid(), memory, prefill);
            }
        } finally {
            if (opened != null) {
                opened.close(); // idempotent
            }
        }
    }

    /** {@code rate} as text, unless --json. */
    private void print(Rate rate, PrintWriter out) {
        if (json) {
            return;
        }
        DecodeThroughput t = rate.throughput();
        out.printf(Locale.ROOT, "%-3s (%s, weights %s): decode %.1f tokens/s (%d tokens in %.3f s after all %d prompts were "
                        + "prefilled); %d tokens in %.2f s overall%n", rate.backend(), rate.device(), rate.weights(), rate.decodePerSecond(),
                t.decodeTokens(), t.decodeSeconds(), requests, t.tokens(), t.wallSeconds());
        if (rounds > 1) {
            out.printf(Locale.ROOT, "    median of %d rounds (after %d warm-up rounds): %s tokens/s%n", rounds, rate.warmupRounds(),
                    Arrays.toString(Arrays.stream(rate.roundRates()).map(v -> Math.round(v * 10) / 10.0).toArray()));
        }
        if (rate.kernelShares() != null) {
            out.printf(Locale.ROOT, "    the Java kernels' calls took %.2f of each lane's time%s%n", median(rate.kernelShares()),
                    rounds > 1 ? " (median of the rounds: " + Arrays.toString(Arrays.stream(rate.kernelShares())
                            .map(v -> Math.round(v * 100) / 100.0).toArray()) + ")" : "");
        }
        if (rate.prefill() != null) {
            out.printf(Locale.ROOT, "    prefill of a %d-token prompt: time to first token %.3f s, %.1f prompt tokens/s%n",
                    rate.prefill().promptTokens(), rate.prefill().ttftSeconds(), rate.prefill().promptTokensPerSecond());
        }
        Memory memory = rate.memory();
        out.printf(Locale.ROOT, "    resident %.1f MB (peak %.1f MB): %.2fx the weights as held (%.1f MB) plus the KV cache (%.1f MB)%n",
                memory.rssBytes() / 1e6, memory.peakRssBytes() / 1e6, memory.ratio(), memory.weightBytes() / 1e6, memory.kvBytes() / 1e6);
        Limit limit = rate.limit();
        if (limit != null) {
            out.printf(Locale.ROOT, "    weights stream at %.1f GB/s (%d OpenBLAS threads%s; the decode kernel alone %.1f GB/s,"
                            + " OpenBLAS alone %.1f GB/s); a decode step reads %,d bytes of"
                            + " weights: at most %.1f tokens/s for %d request(s); reached %.2f of it%s%n",
                    limit.bandwidthGbPerS(), limit.threads(), rounds > 1 ? ", median of a probe after each round" : "",
                    limit.kernelGbPerS(), limit.blasGbPerS(),
                    limit.weightBytesPerToken(), limit.tokensPerSecond(), requests, rate.limitRatio(),
                    rounds > 1 ? " (median of each round against its own probe: "
                            + Arrays.toString(Arrays.stream(rate.roundLimitRatios()).map(v -> Math.round(v * 100) / 100.0).toArray()) + ")" : "");
        }
        out.flush();
    }

    /** A run of one backend and format in a JVM of its own: its exit status and, when 0, what it measured. */
    private record ForkedRun(int status, Rate rate) {
    }

    /**
     * {@link #measure} in a new JVM with this one's options and class path ({@code --in-process --json}); its error lines
     * are copied to this command's, but the JDK's notice of the incubator module.
     */
    private ForkedRun measureForked(String b, WeightFormat format) throws Exception {
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString()));
        command.addAll(ManagementFactory.getRuntimeMXBean().getInputArguments());
        command.addAll(List.of("-cp", System.getProperty("java.class.path"), GraphlaneCli.class.getName(), "bench", "decode", "--in-process",
                "--json", "--backends", b, "--weights", format.optionValue(), "--device", String.valueOf(device), "--stages", String.valueOf(stages),
                "--requests", String.valueOf(requests), "--new-tokens", String.valueOf(newTokens), "--rounds", String.valueOf(rounds),
                "--warmup-seconds", String.valueOf(warmupSeconds), "--prompt-tokens", String.valueOf(promptTokens)));
        if (model != null) {
            command.addAll(List.of("--model", model.toString()));
        }
        Path errors = Files.createTempFile("graphlane-bench-decode", ".err");
        Process child = new ProcessBuilder(command).redirectError(errors.toFile()).start();
        try {
            String output = new String(child.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            int status = child.waitFor();
            PrintWriter err = spec.commandLine().getErr();
            for (String line : Files.readAllLines(errors, StandardCharsets.UTF_8)) {
                if (!line.startsWith("WARNING: Using incubator modules")) {
                    err.println(line);
                }
            }
            err.flush();
            if (status != 0) {
                return new ForkedRun(status, null);
            }
            JsonNode root = new ObjectMapper().readTree(output);
            modelName = root.get("model").asText();
            JsonNode r = root.get("results").get(0);
            DecodeThroughput throughput = new DecodeThroughput(requests, r.get("decode_tokens").asInt(), r.get("decode_s").asDouble(),
                    r.get("tokens").asInt(), r.get("wall_s").asDouble());
            double[] roundRates = new double[r.get("decode_tokens_per_s_rounds").size()];
            for (int i = 0; i < roundRates.length; i++) {
                roundRates[i] = r.get("decode_tokens_per_s_rounds").get(i).asDouble();
            }
            List<Limit> limits = null;
            if (r.has("limit_tokens_per_s_rounds")) {
                limits = new ArrayList<>();
                for (int i = 0; i < roundRates.length; i++) {
                    limits.add(new Limit(r.get("bandwidth_gb_per_s_rounds").get(i).asDouble(), r.get("blas_threads").asInt(),
                            r.get("weight_bytes_per_token").asLong(), r.get("limit_tokens_per_s_rounds").get(i).asDouble(),
                            r.get("kernel_bandwidth_gb_per_s_rounds").get(i).asDouble(), r.get("blas_bandwidth_gb_per_s").asDouble()));
                }
            }
            double[] kernelShares = null;
            if (r.has("kernel_call_share_rounds")) {
                kernelShares = new double[roundRates.length];
                for (int i = 0; i < roundRates.length; i++) {
                    kernelShares[i] = r.get("kernel_call_share_rounds").get(i).asDouble();
                }
            }
            Memory memory = new Memory(r.get("rss_bytes").asLong(), r.get("peak_rss_bytes").asLong(), r.get("weight_bytes").asLong(),
                    r.get("kv_bytes").asLong());
            PrefillLatency prefill = r.has("ttft_s") ? new PrefillLatency(r.get("prompt_tokens").asInt(), r.get("ttft_s").asDouble()) : null;
            return new ForkedRun(0, new Rate(r.get("backend").asText(), r.get("weights").asText(), r.get("device").asText(), throughput,
                    roundRates, r.get("warmup_rounds").asInt(), limits, kernelShares, r.get("pid").asLong(), memory, prefill));
        } finally {
            child.destroyForcibly();
            Files.deleteIfExists(errors);
        }
    }

    /** The bound of the model held in {@code format}: the bytes a decode step reads from the weights as they are held. */
    private DecodeBound weightBytes(WeightFormat format) {
        ModelDirectory directory = ModelDirectory.open(model == null ? DemoModel.ensure() : model);
        try (CheckpointSource source = directory.openSource(CheckpointSource.DEFAULT_MAX_OPEN_SHARDS)) {
            return new DecodeBound(WeightPlan.decodeBytesPerToken(source, directory.config(), format));
        }
    }

    /** The bytes the whole model's weights take held in {@code format} on the CPU. */
    private long heldWeightBytes(WeightFormat format) {
        ModelDirectory directory = ModelDirectory.open(model == null ? DemoModel.ensure() : model);
        try (CheckpointSource source = directory.openSource(CheckpointSource.DEFAULT_MAX_OPEN_SHARDS)) {
            return WeightPlan.heldBytes(source, directory.config(), format);
        }
    }

    /**
     * The best seconds of one product and of an R-row product (R the requests) over {@code probe}'s matrix, of the model's
     * decode-step size, through OpenBLAS when {@code blas} and else through the decode kernel, with as many threads as the
     * pipeline's lanes use together (every core unless overridden); then OpenBLAS gets back the pipeline's count.
     */
    private double[] probeSeconds(WeightStreamProbe probe, boolean blas) {
        int pipelineThreads = CpuNeuralBackend.blasThreads();
        CpuNeuralBackend.setBlasThreads(probeThreads());
        try {
            return blas ? new double[] {probe.bestBlasSeconds(1, 5), probe.bestBlasSeconds(requests, 5)}
                    : new double[] {probe.bestKernelSeconds(1, 5), probe.bestKernelSeconds(requests, 5)};
        } finally {
            CpuNeuralBackend.setBlasThreads(Math.max(1, pipelineThreads));
        }
    }

    private static int probeThreads() {
        return CpuNeuralBackend.blasThreadsFor(1, CpuNeuralBackend.cores(), CpuNeuralBackend.blasThreadsOverride());
    }

    /**
     * The bound of one round from the best seconds of one product through the decode kernel and through OpenBLAS, and of an
     * R-row product (the faster of the two), over {@code probe}'s matrix.
     */
    private Limit limit(WeightStreamProbe probe, DecodeBound bound, double kernelSeconds, double blasSeconds, double rowsSeconds) {
        double oneRowSeconds = Math.min(kernelSeconds, blasSeconds);
        return new Limit(probe.bytes() / oneRowSeconds / 1e9, probeThreads(), bound.weightBytesPerToken(),
                requests * bound.limitTokensPerSecond(probe.bytes() / rowsSeconds), probe.bytes() / kernelSeconds / 1e9,
                probe.bytes() / blasSeconds / 1e9);
    }
}
