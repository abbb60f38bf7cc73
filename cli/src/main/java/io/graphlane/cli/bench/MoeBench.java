package io.graphlane.cli.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.graphlane.backend.cpu.nn.CpuTensor;
import io.graphlane.core.GraphlaneException;
import io.graphlane.inference.generate.RequestIds;
import io.graphlane.inference.generate.StagedModel;
import io.graphlane.inference.model.CpuModels;
import io.graphlane.inference.model.ModelDirectory;
import io.graphlane.inference.moe.ExpertParallelExperts;
import io.graphlane.inference.llama.Segment;
import io.graphlane.inference.moe.ExpertParallelModels;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code graphlane bench moe}: tokens/s of a mixture-of-experts model with its experts over {@code --expert-parallel E}
 * lanes in this JVM, for each E given, against the single-lane run (every expert on the stage's thread) measured in the
 * same process; with the all-to-all bytes and time per sparse-layer step.
 */
@Command(name = "moe", mixinStandardHelpOptions = true,
        description = {"Tokens/s of a mixture-of-experts model (Mixtral, Qwen3-MoE) at each --expert-parallel E in this JVM,",
            "against the single-lane run in the same process; all-to-all bytes and time per sparse-layer step."})
public final class MoeBench implements Callable<Integer> {

    @Option(names = "--model", paramLabel = "MODEL", required = true,
            description = "A Hugging Face model directory of MixtralForCausalLM or Qwen3MoeForCausalLM.")
    Path model;

    @Option(names = "--expert-parallel", paramLabel = "LIST", split = ",", defaultValue = "1,2,4",
            description = "Expert lanes to measure, in order (default ${DEFAULT-VALUE}); each must divide the experts per layer.")
    List<Integer> expertParallel;

    @Option(names = "--stages", paramLabel = "P", defaultValue = "1", description = "Pipeline stages (default ${DEFAULT-VALUE}).")
    int stages;

    @Option(names = "--requests", paramLabel = "R", defaultValue = "8", description = "Requests batched per step (default ${DEFAULT-VALUE}).")
    int requests;

    @Option(names = "--prompt-tokens", paramLabel = "L", defaultValue = "16", description = "Prompt length (default ${DEFAULT-VALUE}).")
    int promptTokens;

    @Option(names = "--new-tokens", paramLabel = "N", defaultValue = "16", description = "Tokens generated per request (default ${DEFAULT-VALUE}).")
    int newTokens;

    @Option(names = "--rounds", paramLabel = "N", defaultValue = "3",
            description = "Timed rounds per configuration after one untimed round; the median is reported (default ${DEFAULT-VALUE}).")
    int rounds;

    @Option(names = "--json", description = "Print one JSON object.")
    boolean json;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    /** One configuration's figures. */
    record Figures(String label, int expertParallel, double tokensPerSecond, double[] roundRates, long allToAllSteps,
                   double bytesPerStep, double millisPerStep, double collectiveMillisPerStep, boolean tokensEqualBaseline) {
    }

    @Override
    public Integer call() {
        if (stages < 1 || requests < 1 || promptTokens < 1 || newTokens < 1 || rounds < 1 || rounds > 100) {
            throw new GraphlaneException("--stages, --requests, --prompt-tokens, --new-tokens must be >= 1 and --rounds in [1, 100]; got "
                    + stages + ", " + requests + ", " + promptTokens + ", " + newTokens + ", " + rounds);
        }
        ModelDirectory dir = ModelDirectory.open(model);
        if (dir.config().moe() == null) {
            throw new GraphlaneException("--model " + model + ": not a mixture-of-experts model (MixtralForCausalLM, Qwen3MoeForCausalLM)");
        }
        for (int e : expertParallel) {
            if (e < 1 || dir.config().moe().expertCount() % e != 0) {
                throw new GraphlaneException("--expert-parallel " + e + " must be >= 1 and divide the " + dir.config().moe().expertCount()
                        + " experts per layer");
            }
        }
        List<int[]> work = new ArrayList<>();
        Random r = new Random(42);
        for (int i = 0; i < requests; i++) {
            int[] prompt = new int[promptTokens];
            for (int t = 0; t < promptTokens; t++) {
                prompt[t] = r.nextInt(dir.config().vocabSize());
            }
            work.add(prompt);
        }
        List<Figures> figures = new ArrayList<>();
        List<int[]> baselineTokens;
        try (StagedModel<CpuTensor> single = CpuModels.staged(dir, stages)) {
            Measured m = measure(single, work);
            baselineTokens = m.tokens;
            figures.add(new Figures("single lane", 0, median(m.rates), m.rates, 0, 0, 0, 0, true));
        }
        for (int e : expertParallel) {
            ExpertParallelModels.Parallel p = ExpertParallelModels.staged(dir, stages, e);
            try (StagedModel<CpuTensor> m0 = p.model()) {
                Measured m = measure(m0, work);
                long steps = p.lanes().stream().mapToLong(ExpertParallelExperts::steps).sum();
                long bytes = p.lanes().stream().mapToLong(ExpertParallelExperts::bytesMoved).sum();
                long nanos = p.lanes().stream().mapToLong(ExpertParallelExperts::nanosInAllToAll).sum();
                long collective = p.lanes().stream().mapToLong(ExpertParallelExperts::nanosInCollectives).sum();
                boolean equal = true;
                for (int i = 0; i < work.size(); i++) {
                    equal &= Arrays.equals(baselineTokens.get(i), m.tokens.get(i));
                }
                figures.add(new Figures("expert-parallel " + e, e, median(m.rates), m.rates, steps,
                        steps == 0 ? 0 : (double) bytes / steps, steps == 0 ? 0 : nanos / 1e6 / steps,
                        steps == 0 ? 0 : collective / 1e6 / steps, equal));
            }
        }
        print(dir, figures);
        return 0;
    }

    private record Measured(double[] rates, List<int[]> tokens) {
    }

    private Measured measure(StagedModel<CpuTensor> m, List<int[]> work) {
        List<int[]> tokens = greedy(m, work); // untimed: the JIT compiles the step
        double[] rates = new double[rounds];
        for (int i = 0; i < rounds; i++) {
            long start = System.nanoTime();
            tokens = greedy(m, work);
            double seconds = (System.nanoTime() - start) / 1e9;
            rates[i] = (double) requests * newTokens / seconds;
        }
        return new Measured(rates, tokens);
    }

    /** Every prompt's {@code newTokens} greedy tokens: one prefill step for all prompts, then a decode step per token. */
    private List<int[]> greedy(StagedModel<CpuTensor> m, List<int[]> prompts) {
        int n = prompts.size();
        long firstId = RequestIds.next(n);
        int[][] out = new int[n][newTokens];
        try {
            List<Segment> segments = new ArrayList<>(n);
            int total = prompts.stream().mapToInt(p -> p.length).sum();
            int[] tokens = new int[total];
            int offset = 0;
            for (int i = 0; i < n; i++) {
                int[] p = prompts.get(i);
                segments.add(new Segment(firstId + i, 0, p.length));
                System.arraycopy(p, 0, tokens, offset, p.length);
                offset += p.length;
            }
            float[][] logits = m.step(segments, tokens);
            for (int t = 0; t < newTokens; t++) {
                int[] next = new int[n];
                List<Segment> decode = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    next[i] = argmax(logits[i]);
                    out[i][t] = next[i];
                    decode.add(new Segment(firstId + i, prompts.get(i).length + t, 1));
                }
                if (t + 1 < newTokens) {
                    logits = m.step(decode, next);
                }
            }
        } finally {
            for (int i = 0; i < n; i++) {
                m.endRequest(firstId + i);
            }
        }
        return List.of(out);
    }

    private static int argmax(float[] values) {
        int best = 0;
        for (int i = 1; i < values.length; i++) {
            if (values[i] > values[best]) {
                best = i;
            }
        }
        return best;
    }

    private static double median(double[] values) {
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        return sorted[sorted.length / 2];
    }

    private void print(ModelDirectory dir, List<Figures> figures) {
        PrintWriter out = spec.commandLine().getOut();
        double base = figures.get(0).tokensPerSecond();
        if (json) {
            ObjectMapper mapper = new ObjectMapper();
            ObjectNode root = mapper.createObjectNode();
            root.put("model", dir.name()).put("architecture", dir.checkpoint().config().architecture().hfName())
                    .put("experts", dir.config().moe().expertCount()).put("experts_per_token", dir.config().moe().expertsPerToken())
                    .put("stages", stages).put("requests", requests).put("prompt_tokens", promptTokens).put("new_tokens", newTokens)
                    .put("rounds", rounds).put("baseline", "single lane (every expert on the stage's thread), same process");
            ArrayNode runs = root.putArray("runs");
            for (Figures f : figures) {
                ObjectNode n = runs.addObject();
                n.put("label", f.label()).put("expert_parallel", f.expertParallel()).put("tokens_per_second", f.tokensPerSecond())
                        .put("ratio_to_single_lane", f.tokensPerSecond() / base).put("all_to_all_steps", f.allToAllSteps())
                        .put("all_to_all_bytes_per_step", f.bytesPerStep()).put("dispatch_to_combine_ms_per_step", f.millisPerStep())
                        .put("all_to_all_ms_per_step", f.collectiveMillisPerStep())
                        .put("all_to_all_gb_per_s", f.collectiveMillisPerStep() == 0 ? 0 : f.bytesPerStep() / f.collectiveMillisPerStep() / 1e6)
                        .put("tokens_equal_single_lane", f.tokensEqualBaseline());
                ArrayNode rr = n.putArray("round_tokens_per_second");
                for (double v : f.roundRates()) {
                    rr.add(v);
                }
            }
            out.println(root);
        } else {
            out.printf(Locale.ROOT, "%s: %d experts, top-%d; %d stage(s), %d requests x (%d prompt + %d new tokens), median of %d rounds%n",
                    dir.name(), dir.config().moe().expertCount(), dir.config().moe().expertsPerToken(), stages, requests, promptTokens,
                    newTokens, rounds);
            for (Figures f : figures) {
                out.printf(Locale.ROOT, "%-20s %10.1f tokens/s  %5.2fx single lane%s%n", f.label(), f.tokensPerSecond(),
                        f.tokensPerSecond() / base, f.expertParallel() == 0 ? ""
                                : String.format(Locale.ROOT, "  per sparse-layer step: all-to-all %.0f bytes in %.3f ms (%.3f GB/s),"
                                        + " %.3f ms dispatch to combine (experts included); tokens %s", f.bytesPerStep(),
                                f.collectiveMillisPerStep(), f.collectiveMillisPerStep() == 0 ? 0 : f.bytesPerStep() / f.collectiveMillisPerStep() / 1e6,
                                f.millisPerStep(), f.tokensEqualBaseline() ? "equal" : "DIFFER"));
            }
        }
        out.flush();
    }
}
