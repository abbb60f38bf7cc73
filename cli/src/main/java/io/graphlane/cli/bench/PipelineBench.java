package io.graphlane.cli.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.graphlane.cli.sim.SimPipeline;
import io.graphlane.cli.sim.SimStageProgram;
import io.graphlane.core.GraphlaneException;
import io.graphlane.core.trace.TraceRecorder;
import io.graphlane.inference.api.GenerationRequest;
import io.graphlane.inference.api.GenerationResult;
import io.graphlane.inference.pipeline.InferencePipeline;
import io.graphlane.scheduler.pipeline.PipelineSettings;
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
 * {@code graphlane bench pipeline}: with {@code --backend sim}, the makespan of M micro-batches
 * through P simulated stages of fixed duration against the ideal (M+P−1)·t; with
 * {@code --backend cpu}, decode tokens/s of 8 concurrent requests at 1, 2 and 4 stages.
 */
@Command(name = "pipeline", mixinStandardHelpOptions = true,
        description = {
            "sim: M micro-batches through P simulated stages of t ms each; efficiency = (M+P-1)*t / makespan (the ideal is 1).",
            "cpu: tokens/s of concurrent requests on the model (default: the demo model) at 1, 2 and 4 stages, in one run."
        })
public final class PipelineBench implements Callable<Integer> {

    @Option(names = "--backend", paramLabel = "sim|cpu", defaultValue = "sim", description = "sim (default) or cpu.")
    String backend;

    @Option(names = "--stages", paramLabel = "P", defaultValue = "4", description = "sim: stages (default ${DEFAULT-VALUE}).")
    int stages;

    @Option(names = "--microbatches", paramLabel = "M", defaultValue = "32", description = "sim: micro-batches (default ${DEFAULT-VALUE}).")
    int microbatches;

    @Option(names = "--stage-ms", paramLabel = "T", defaultValue = "2", description = "sim: duration of one stage step in ms (default ${DEFAULT-VALUE}).")
    double stageMs;

    @Option(names = "--runs", paramLabel = "N", defaultValue = "5", description = "sim: measured runs after the warm-up runs; the median counts (default ${DEFAULT-VALUE}).")
    int runs;

    @Option(names = "--warmup-runs", paramLabel = "N", defaultValue = "20", description = "sim: unmeasured runs first, until the JIT has compiled the engine's and lanes' paths (default ${DEFAULT-VALUE}).")
    int warmupRuns;

    @Option(names = "--model", paramLabel = "MODEL", description = "cpu: a Hugging Face model directory, a GGUF file, or a directory holding exactly one (default: the demo model).")
    Path model;

    @Option(names = "--requests", paramLabel = "R", defaultValue = "8", description = "cpu: concurrent requests (default ${DEFAULT-VALUE}).")
    int requests;

    @Option(names = "--new-tokens", paramLabel = "N", defaultValue = "32", description = "cpu: tokens generated per request (default ${DEFAULT-VALUE}).")
    int newTokens;

    @Option(names = "--stage-counts", paramLabel = "LIST", split = ",", defaultValue = "1,2,4", description = "cpu: stage counts to measure (default ${DEFAULT-VALUE}).")
    List<Integer> stageCounts;

    @Option(names = "--json", description = "Print one JSON object.")
    boolean json;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        return switch (backend) {
            case "sim" -> sim();
            case "cpu" -> cpu();
            default -> throw new GraphlaneException("--backend must be sim or cpu, got '" + backend + "'");
        };
    }

    private int sim() throws Exception {
        if (stages < 1 || microbatches < 1 || !(stageMs > 0) || runs < 1 || warmupRuns < 0) {
            throw new GraphlaneException("--stages, --microbatches, --runs must be >= 1, --warmup-runs >= 0 and --stage-ms > 0; got "
                    + stages + ", " + microbatches + ", " + runs + ", " + warmupRuns + ", " + stageMs);
        }
        Duration t = Duration.ofNanos(Math.round(stageMs * 1e6));
        SimStageProgram program = new SimStageProgram(stages, t, Duration.ZERO, 256);
        // One request per micro-batch, all admitted at once and all in flight together.
        PipelineSettings settings = new PipelineSettings(microbatches, 1, 1, microbatches);
        List<int[]> prompts = new ArrayList<>();
        for (int i = 0; i < microbatches; i++) {
            prompts.add(new int[] {i});
        }
        double[] makespans = new double[runs];
        try (SimPipeline sim = new SimPipeline(program, settings, TraceRecorder.DISABLED)) {
            // A run takes some 100 engine and lane messages per stage: a couple of runs leave those paths interpreted or
            // half-compiled, and a measured run then also times the JIT. The garbage of earlier runs is collected
            // before each run so that no run is charged for another's.
            for (int r = -warmupRuns; r < runs; r++) {
                System.gc();
                long start = System.nanoTime();
                sim.runAll(prompts, 1);
                double ms = (System.nanoTime() - start) / 1e6;
                if (r >= 0) {
                    makespans[r] = ms;
                }
            }
        }
        Arrays.sort(makespans);
        double makespan = makespans[runs / 2];
        double ideal = (microbatches + stages - 1) * stageMs;
        PrintWriter out = spec.commandLine().getOut();
        if (json) {
            ObjectNode o = new ObjectMapper().createObjectNode();
            o.put("stages", stages);
            o.put("microbatches", microbatches);
            o.put("stage_ms", stageMs);
            o.put("makespan_ms", makespan);
            o.put("ideal_ms", ideal);
            o.put("efficiency", ideal / makespan);
            out.println(o);
        } else {
            out.printf(Locale.ROOT, "%d micro-batches through %d simulated stages of %.3f ms: makespan %.2f ms (median of %d), ideal %.2f ms, efficiency %.3f%n",
                    microbatches, stages, stageMs, makespan, runs, ideal, ideal / makespan);
        }
        out.flush();
        return 0;
    }

    private int cpu() throws Exception {
        List<GenerationRequest> batch = new ArrayList<>();
        ObjectMapper m = new ObjectMapper();
        ObjectNode root = m.createObjectNode();
        root.put("backend", "cpu");
        ArrayNode results = root.putArray("results");
        PrintWriter out = spec.commandLine().getOut();
        double first = 0;
        for (int p : stageCounts) {
            InferencePipeline.Builder b = InferencePipeline.builder().stages(p);
            b = model == null ? b.demoModel() : b.model(model);
            try (InferencePipeline pipeline = b.build()) {
                root.put("model", pipeline.modelName());
                batch.clear();
                for (int i = 0; i < requests; i++) {
                    batch.add(GenerationRequest.greedy(List.of(1 + i, 2 + i, 3 + i, 4 + i), newTokens));
                }
                pipeline.generateAll(List.of(GenerationRequest.greedy(List.of(1, 2), 4)), Duration.ofMinutes(5)); // warm-up
                long start = System.nanoTime();
                int tokens = generatedTokens(pipeline, batch);
                double seconds = (System.nanoTime() - start) / 1e9;
                double rate = tokens / seconds;
                if (first == 0) {
                    first = rate;
                }
                results.addObject().put("stages", p).put("tokens_per_s", rate).put("ratio_vs_first", rate / first);
                if (!json) {
                    out.printf(Locale.ROOT, "%d stage(s): %d tokens in %.2f s = %.1f tokens/s (%.2fx the first)%n", p, tokens, seconds, rate, rate / first);
                    out.flush();
                }
            }
        }
        root.put("requests", requests);
        root.put("new_tokens", newTokens);
        if (json) {
            out.println(root);
        }
        out.flush();
        return 0;
    }

    /** Runs {@code batch} through {@code pipeline} at once and returns the tokens generated. */
    static int generatedTokens(InferencePipeline pipeline, List<GenerationRequest> batch) throws Exception {
        List<GenerationResult> done = pipeline.generateAll(batch, Duration.ofHours(1));
        return done.stream().mapToInt(r -> r.generatedIds().size()).sum();
    }
}
