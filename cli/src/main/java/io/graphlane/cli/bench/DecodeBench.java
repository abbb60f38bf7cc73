package io.graphlane.cli.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.graphlane.backend.cpu.nn.CpuNeuralBackend;
import io.graphlane.backend.cpu.nn.WeightStreamProbe;
import io.graphlane.core.GraphlaneException;
import io.graphlane.inference.backend.InferenceBackend;
import io.graphlane.inference.gpu.GpuInference;
import io.graphlane.inference.pipeline.DecodeBound;
import io.graphlane.inference.pipeline.DecodeThroughput;
import io.graphlane.inference.pipeline.InferencePipeline;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
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

    @Option(names = "--model", paramLabel = "DIR", description = "A Hugging Face model directory (default: the demo model).")
    Path model;

    @Option(names = "--stages", paramLabel = "P", defaultValue = "2", description = "Pipeline stages (default ${DEFAULT-VALUE}).")
    int stages;

    @Option(names = "--requests", paramLabel = "R", defaultValue = "8", description = "Concurrent requests (default ${DEFAULT-VALUE}).")
    int requests;

    @Option(names = "--new-tokens", paramLabel = "N", defaultValue = "64", description = "Tokens generated per request (default ${DEFAULT-VALUE}).")
    int newTokens;

    @Option(names = "--json", description = "Print one JSON object.")
    boolean json;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    /** One backend's figures; {@code limit} is null where no bound was measured (the GPU). */
    record Rate(String backend, String device, DecodeThroughput throughput, Limit limit) {
        double decodePerSecond() {
            return throughput.decodeTokensPerSecond();
        }

        /** Decode tokens/s over the bound for the same number of requests. */
        double limitRatio() {
            return decodePerSecond() / limit.tokensPerSecond();
        }
    }

    /**
     * The weight-streaming bound of a CPU run, measured in the same run: {@code bandwidthGbPerS} of a one-row
     * product over a weight-sized matrix with {@code threads} OpenBLAS threads, the bytes a decode step reads,
     * and the tokens/s the run's requests could reach at most (the R-row product's rate, so a compute-bound
     * product lowers it).
     */
    record Limit(double bandwidthGbPerS, int threads, long weightBytesPerToken, double tokensPerSecond) {
    }

    @Override
    public Integer call() throws Exception {
        if (stages < 1 || requests < 1 || newTokens < 2) {
            throw new GraphlaneException("--stages and --requests must be >= 1 and --new-tokens >= 2; got " + stages + ", " + requests
                    + ", " + newTokens);
        }
        if (backends.isEmpty()) {
            throw new GraphlaneException("--backends names no backend; give cpu, gpu or both");
        }
        for (String b : backends) {
            if (!b.equals("cpu") && !b.equals("gpu")) {
                throw new GraphlaneException("--backends: '" + b + "' is not cpu or gpu");
            }
        }
        PrintWriter out = spec.commandLine().getOut();
        List<Rate> rates = new ArrayList<>();
        String modelName = null;
        for (String b : backends) {
            // The GPU is opened first, so an unusable one ends the run with one line before anything is measured.
            InferenceBackend<?, ?, ?, ?, ?> opened = b.equals("gpu") ? GpuInference.open(device) : null;
            try {
                InferencePipeline.Builder builder = InferencePipeline.builder().stages(stages);
                builder = model == null ? builder.demoModel() : builder.model(model);
                if (opened != null) {
                    builder = builder.backend(() -> opened);
                }
                try (InferencePipeline pipeline = builder.build()) {
                    modelName = pipeline.modelName();
                    DecodeThroughput throughput = DecodeThroughput.measure(pipeline, requests, newTokens, Duration.ofHours(1));
                    Limit limit = b.equals("cpu") ? cpuLimit(DecodeBound.of(pipeline.config(), Float.BYTES)) : null;
                    Rate rate = new Rate(b, pipeline.backendDescription(), throughput, limit);
                    rates.add(rate);
                    if (!json) {
                        out.printf(Locale.ROOT, "%-3s (%s): decode %.1f tokens/s (%d tokens in %.3f s after all %d prompts were prefilled); "
                                        + "%d tokens in %.2f s overall%n", b, rate.device(), rate.decodePerSecond(),
                                rate.throughput().decodeTokens(), rate.throughput().decodeSeconds(), requests, rate.throughput().tokens(),
                                rate.throughput().wallSeconds());
                        if (limit != null) {
                            out.printf(Locale.ROOT, "    weights stream at %.1f GB/s (%d OpenBLAS threads); a decode step reads %,d bytes of"
                                            + " weights: at most %.1f tokens/s for %d request(s); reached %.2f of it%n",
                                    limit.bandwidthGbPerS(), limit.threads(), limit.weightBytesPerToken(), limit.tokensPerSecond(),
                                    requests, rate.limitRatio());
                        }
                        out.flush();
                    }
                }
            } finally {
                if (opened != null) {
                    opened.close(); // idempotent
                }
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
            ArrayNode results = root.putArray("results");
            for (Rate r : rates) {
                DecodeThroughput t = r.throughput();
                ObjectNode result = results.addObject().put("backend", r.backend()).put("device", r.device())
                        .put("decode_tokens_per_s", r.decodePerSecond()).put("decode_tokens", t.decodeTokens()).put("decode_s", t.decodeSeconds())
                        .put("tokens", t.tokens()).put("wall_s", t.wallSeconds());
                if (r.limit() != null) {
                    result.put("bandwidth_gb_per_s", r.limit().bandwidthGbPerS()).put("blas_threads", r.limit().threads())
                            .put("weight_bytes_per_token", r.limit().weightBytesPerToken())
                            .put("limit_tokens_per_s", r.limit().tokensPerSecond()).put("limit_ratio", r.limitRatio());
                }
            }
            if (rates.size() > 1) {
                root.put("ratio_first_vs_last", first.decodePerSecond() / last.decodePerSecond());
            }
            out.println(root);
        } else if (rates.size() > 1) {
            out.printf(Locale.ROOT, "decode tokens/s %s / %s = %.2fx (%s, %d stage(s), %d requests x %d tokens)%n", first.backend(),
                    last.backend(), first.decodePerSecond() / last.decodePerSecond(), modelName, stages, requests, newTokens);
        }
        out.flush();
        return 0;
    }

    /**
     * Streams a matrix of the model's decode-step size through the decode kernel with as many OpenBLAS threads as
     * the pipeline's lanes use together (every core unless overridden), then gives OpenBLAS back the pipeline's count.
     */
    private Limit cpuLimit(DecodeBound bound) {
        int pipelineThreads = CpuNeuralBackend.blasThreads();
        int threads = CpuNeuralBackend.blasThreadsFor(1, Runtime.getRuntime().availableProcessors(), CpuNeuralBackend.blasThreadsOverride());
        CpuNeuralBackend.setBlasThreads(threads);
        try {
            WeightStreamProbe probe = new WeightStreamProbe(bound.weightBytesPerToken());
            double bandwidth = probe.bytes() / probe.bestSeconds(1, 5);
            double rowsRate = probe.bytes() / probe.bestSeconds(requests, 5);
            return new Limit(bandwidth / 1e9, threads, bound.weightBytesPerToken(), requests * bound.limitTokensPerSecond(rowsRate));
        } finally {
            CpuNeuralBackend.setBlasThreads(Math.max(1, pipelineThreads));
        }
    }
}
