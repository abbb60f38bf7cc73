package io.graphlane.cli.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.graphlane.cli.SizeOption;
import io.graphlane.cli.sim.SimOffloadProgram;
import io.graphlane.cli.sim.SimPipeline;
import io.graphlane.core.GraphlaneException;
import io.graphlane.core.trace.TraceRecorder;
import io.graphlane.inference.offload.OffloadPlan;
import io.graphlane.inference.pipeline.DecodeThroughput;
import io.graphlane.inference.pipeline.InferencePipeline;
import io.graphlane.inference.offload.TransferSubmissions;
import io.graphlane.scheduler.pipeline.PipelineSettings;
import io.graphlane.testkit.sim.SimBackend;
import io.graphlane.testkit.sim.SimCompletion;
import io.graphlane.testkit.sim.SimExecutor;
import io.graphlane.testkit.sim.SimTransferBackend;
import io.graphlane.testkit.sim.SimWork;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code graphlane bench offload}: decode tokens/s with every layer resident (the baseline) and with a device weights
 * budget that streams layers through transfer lanes, in one run. On the simulated device, compute and transfer times
 * are set, so the overlap is measured exactly: efficiency = ideal ÷ measured time per token, where the ideal is
 * Σ over layers of max(transfer, compute) (with a lookahead of 0, transfer + compute: nothing overlaps).
 */
@Command(name = "offload", mixinStandardHelpOptions = true,
        description = {
            "Decode tokens/s with all weights resident and with --device-weights-budget (layers streamed from host memory on a transfer lane).",
            "sim: L layers of --compute-ms each, copies of --transfer-ms each; efficiency = sum over layers of max(transfer, compute) / measured ms per token.",
            "cpu: the model (default: the demo model) on CPU lanes; gpu: not measured on a machine without a CUDA device."
        })
public final class OffloadBench implements Callable<Integer> {

    @Option(names = "--backend", paramLabel = "sim|cpu|gpu", defaultValue = "sim", description = "sim (default), cpu or gpu.")
    String backend;

    @Option(names = "--layers", paramLabel = "N", defaultValue = "32", description = "sim: decoder layers (default ${DEFAULT-VALUE}).")
    int layers;

    @Option(names = "--stages", paramLabel = "P", defaultValue = "1", description = "Pipeline stages (default ${DEFAULT-VALUE}).")
    int stages;

    @Option(names = "--compute-ms", paramLabel = "MS", defaultValue = "4", description = "sim: compute time of one layer (default ${DEFAULT-VALUE}).")
    double computeMs;

    @Option(names = "--transfer-ms", paramLabel = "MS", defaultValue = "4", description = "sim: time to promote one layer (default ${DEFAULT-VALUE}).")
    double transferMs;

    @Option(names = "--layer-bytes", paramLabel = "SIZE", defaultValue = "64m", description = "sim: the size of one layer (default ${DEFAULT-VALUE}).")
    String layerBytes;

    @Option(names = "--device-weights-budget", paramLabel = "SIZE",
            description = "Weights held on the device; the rest is streamed. Default: each stage's streaming window only, so every layer streams.")
    String budget;

    @Option(names = "--offload-lookahead", paramLabel = "L", defaultValue = "2", description = "Layers promoted ahead of the one computed (default ${DEFAULT-VALUE}).")
    int lookahead;

    @Option(names = "--new-tokens", paramLabel = "N", defaultValue = "16", description = "Tokens generated in each measured run (default ${DEFAULT-VALUE}).")
    int newTokens;

    @Option(names = "--runs", paramLabel = "N", defaultValue = "3", description = "Measured runs of each configuration; the median counts (default ${DEFAULT-VALUE}).")
    int runs;

    @Option(names = "--warmup-runs", paramLabel = "N", defaultValue = "2", description = "Unmeasured runs first (default ${DEFAULT-VALUE}).")
    int warmupRuns;

    @Option(names = "--model", paramLabel = "MODEL", description = "cpu: a Hugging Face model directory, a GGUF file, or a directory holding exactly one (default: the demo model).")
    Path model;

    @Option(names = "--requests", paramLabel = "R", defaultValue = "4", description = "cpu: concurrent requests (default ${DEFAULT-VALUE}).")
    int requests;

    @Option(names = "--json", description = "Print one JSON object.")
    boolean json;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        return switch (backend) {
            case "sim" -> sim();
            case "cpu" -> cpu();
            case "gpu" -> throw new GraphlaneException("bench offload --backend gpu needs a CUDA device and is measured by the GPU check;"
                    + " on this machine use --backend sim or cpu");
            default -> throw new GraphlaneException("--backend must be sim, cpu or gpu, got '" + backend + "'");
        };
    }

    /** The per-token result of one configuration. */
    record Measured(double msPerToken, double tokensPerSecond) {
    }

    private int sim() throws Exception {
        if (layers < 1 || stages < 1 || stages > layers || !(computeMs >= 0) || !(transferMs >= 0) || newTokens < 1 || runs < 1
                || warmupRuns < 0) {
            throw new GraphlaneException("--layers and --stages must be >= 1 (stages at most layers), --compute-ms and --transfer-ms >= 0,"
                    + " --new-tokens and --runs >= 1, --warmup-runs >= 0; got " + layers + ", " + stages + ", " + computeMs + ", "
                    + transferMs + ", " + newTokens + ", " + runs + ", " + warmupRuns);
        }
        long layer = SizeOption.parse("--layer-bytes", layerBytes);
        List<long[]> stageLayers = new ArrayList<>();
        for (int s = 0; s < stages; s++) {
            long[] bytes = new long[layers / stages + (s < layers % stages ? 1 : 0)];
            Arrays.fill(bytes, layer);
            stageLayers.add(bytes);
        }
        long budgetBytes = budget != null ? SizeOption.parse("--device-weights-budget", budget) : stages * (lookahead + 1L) * layer;
        OffloadPlan resident = OffloadPlan.plan(Long.MAX_VALUE, 0, stageLayers, lookahead);
        OffloadPlan streamed = OffloadPlan.plan(budgetBytes, 0, stageLayers, lookahead);
        PrintWriter out = spec.commandLine().getOut();
        if (!json) {
            streamed.describe().forEach(out::println);
        }
        Duration compute = Duration.ofNanos(Math.round(computeMs * 1e6));
        Duration transfer = Duration.ofNanos(Math.round(transferMs * 1e6));
        Measured base = measureSim(resident, compute, transfer);
        Measured offload = measureSim(streamed, compute, transfer);
        double idealBase = layers * computeMs;
        double idealOffload = 0;
        for (OffloadPlan.Stage s : streamed.stages()) {
            for (int l = 0; l < s.layerBytes().length; l++) {
                double t = s.isResident(l) ? 0 : transferMs;
                idealOffload += s.lookahead() == 0 ? t + computeMs : Math.max(t, computeMs);
            }
        }
        if (json) {
            ObjectNode o = new ObjectMapper().createObjectNode();
            o.put("backend", "sim").put("layers", layers).put("stages", stages).put("compute_ms", computeMs).put("transfer_ms", transferMs)
                    .put("lookahead", lookahead).put("budget_bytes", budgetBytes).put("streamed_layers", streamed.stages().stream()
                            .mapToInt(OffloadPlan.Stage::streamedCount).sum())
                    .put("streamed_bytes_per_token", streamed.streamedBytesPerStep())
                    .put("resident_ms_per_token", base.msPerToken()).put("resident_tokens_per_s", base.tokensPerSecond())
                    .put("resident_efficiency", idealBase / base.msPerToken())
                    .put("offload_ms_per_token", offload.msPerToken()).put("offload_tokens_per_s", offload.tokensPerSecond())
                    .put("ideal_ms_per_token", idealOffload).put("efficiency", idealOffload / offload.msPerToken())
                    .put("ratio_vs_resident", offload.tokensPerSecond() / base.tokensPerSecond());
            out.println(o);
        } else {
            out.printf(Locale.ROOT, "all resident: %.2f ms/token = %.1f tokens/s (ideal %.2f ms, efficiency %.3f)%n",
                    base.msPerToken(), base.tokensPerSecond(), idealBase, idealBase / base.msPerToken());
            out.printf(Locale.ROOT, "with budget:  %.2f ms/token = %.1f tokens/s (%.2fx the resident run); ideal %.2f ms, efficiency %.3f%n",
                    offload.msPerToken(), offload.tokensPerSecond(), offload.tokensPerSecond() / base.tokensPerSecond(), idealOffload,
                    idealOffload / offload.msPerToken());
        }
        out.flush();
        return 0;
    }

    /**
     * Decode tokens/s of {@link #requests} requests on CPU lanes with every weight resident and under the budget, in this
     * run, alternating the two {@link #runs} times; the medians count.
     */
    private int cpu() throws Exception {
        if (budget == null) {
            throw new GraphlaneException("bench offload --backend cpu needs --device-weights-budget SIZE (the layers beyond it are streamed)");
        }
        if (requests < 1 || newTokens < 1 || runs < 1 || stages < 1) {
            throw new GraphlaneException("--requests, --new-tokens, --runs and --stages must be >= 1; got " + requests + ", " + newTokens
                    + ", " + runs + ", " + stages);
        }
        long budgetBytes = SizeOption.parse("--device-weights-budget", budget);
        PrintWriter out = spec.commandLine().getOut();
        List<String> plan = new ArrayList<>();
        double[] resident = new double[runs];
        double[] streamed = new double[runs];
        try (InferencePipeline base = cpuPipeline(null, plan); InferencePipeline offload = cpuPipeline(budgetBytes, plan)) {
            if (!json) {
                plan.forEach(out::println);
                out.flush();
            }
            for (int r = -warmupRuns; r < runs; r++) {
                double a = DecodeThroughput.measure(base, requests, newTokens, Duration.ofHours(1)).decodeTokensPerSecond();
                double b = DecodeThroughput.measure(offload, requests, newTokens, Duration.ofHours(1)).decodeTokensPerSecond();
                if (r >= 0) {
                    resident[r] = a;
                    streamed[r] = b;
                }
            }
        }
        Arrays.sort(resident);
        Arrays.sort(streamed);
        double a = resident[runs / 2];
        double b = streamed[runs / 2];
        if (json) {
            ObjectNode o = new ObjectMapper().createObjectNode();
            o.put("backend", "cpu").put("stages", stages).put("requests", requests).put("new_tokens", newTokens)
                    .put("budget_bytes", budgetBytes).put("lookahead", lookahead)
                    .put("resident_decode_tokens_per_s", a).put("offload_decode_tokens_per_s", b).put("ratio_vs_resident", b / a);
            o.putArray("plan").addAll(plan.stream().map(o::textNode).toList());
            out.println(o);
        } else {
            out.printf(Locale.ROOT, "decode tokens/s, %d requests x %d tokens, %d stage(s), median of %d: all resident %.1f, with budget %.1f"
                    + " (%.2fx the resident run)%n", requests, newTokens, stages, runs, a, b, b / a);
        }
        out.flush();
        return 0;
    }

    private InferencePipeline cpuPipeline(Long budgetBytes, List<String> plan) {
        InferencePipeline.Builder b = InferencePipeline.builder().stages(stages);
        b = model == null ? b.demoModel() : b.model(model);
        if (budgetBytes != null) {
            b = b.deviceWeightsBudget(budgetBytes).offloadLookahead(lookahead).onOffloadPlan(plan::add);
        }
        return b.build();
    }

    /** One request decoding {@link #newTokens} on the simulated device under {@code plan}: the median ms per token. */
    private Measured measureSim(OffloadPlan plan, Duration compute, Duration transferTime) throws Exception {
        SimBackend device = SimBackend.create();
        SimTransferBackend transfer = SimTransferBackend.fixed(device, transferTime);
        TransferSubmissions<SimExecutor, SimCompletion, SimWork> submissions = SimOffloadProgram.submissions(device);
        SimOffloadProgram program = new SimOffloadProgram(plan, compute, transfer, submissions, 32_000);
        double[] ms = new double[runs];
        try (SimPipeline sim = new SimPipeline(program, device, b -> submissions, PipelineSettings.defaults(stages).withMaxInFlightBatches(1),
                TraceRecorder.DISABLED)) {
            for (int r = -warmupRuns; r < runs; r++) {
                System.gc();
                long start = System.nanoTime();
                sim.runAll(List.of(new int[] {1, 2, 3}), newTokens);
                double perToken = (System.nanoTime() - start) / 1e6 / newTokens;
                if (r >= 0) {
                    ms[r] = perToken;
                }
            }
        }
        Arrays.sort(ms);
        double median = ms[runs / 2];
        return new Measured(median, 1000 / median);
    }
}
