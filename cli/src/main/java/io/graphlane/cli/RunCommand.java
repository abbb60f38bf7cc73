package io.graphlane.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.graphlane.cli.trace.LaneTimeline;
import io.graphlane.cli.trace.TimelineHtml;
import io.graphlane.core.GraphlaneException;
import io.graphlane.core.trace.TraceBuffer;
import io.graphlane.core.trace.TraceRecorder;
import io.graphlane.inference.api.GenerationListener;
import io.graphlane.inference.api.GenerationRequest;
import io.graphlane.inference.api.GenerationResult;
import io.graphlane.inference.backend.InferenceBackend;
import io.graphlane.inference.gpu.GpuInference;
import io.graphlane.inference.pipeline.InferencePipeline;
import io.graphlane.inference.weights.WeightFormat;
import io.graphlane.inference.sampling.SamplingParams;
import io.graphlane.inference.tokenizer.StreamingDecoder;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import me.tongfei.progressbar.ProgressBar;
import me.tongfei.progressbar.ProgressBarBuilder;
import me.tongfei.progressbar.ProgressBarStyle;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code graphlane run}: loads a model (by default the built-in demo model), splits it into
 * pipeline stages on CPU lanes (or CUDA streams with {@code --backend gpu}) and generates for
 * every prompt at once, streaming the text.
 */
@Command(name = "run", mixinStandardHelpOptions = true,
        description = {"Generate with pipeline-parallel inference, all prompts in flight at once.",
            "The model's layers split into stages, each stage a lane owned by its actor. Without --model it uses the built-in",
            "demo model (random weights: its text is not meaningful)."})
public final class RunCommand implements Callable<Integer> {
    static final List<String> DEFAULT_PROMPTS = List.of(
            "The quick brown fox", "Once upon a time", "Pipelines keep every stage busy", "Hello from the JVM");

    @Option(names = "--model", paramLabel = "MODEL", description = "A Hugging Face Llama-family directory (config.json, tokenizer.json, *.safetensors), a GGUF file, or a directory holding exactly one. Default: the built-in demo model.")
    Path model;

    @Option(names = "--prompt", paramLabel = "TEXT", description = "A prompt; repeat for several. Default: four built-in prompts.")
    List<String> prompts = new ArrayList<>();

    @Option(names = "--prompt-ids", paramLabel = "IDS", description = "A prompt as comma-separated token ids; repeat for several.")
    List<String> promptIds = new ArrayList<>();

    @Option(names = "--max-new-tokens", paramLabel = "N", defaultValue = "96", description = "Tokens to generate per prompt (default ${DEFAULT-VALUE}).")
    int maxNewTokens;

    @Option(names = "--temperature", paramLabel = "T", defaultValue = "0", description = "0 is greedy (default); higher samples more freely.")
    double temperature;

    @Option(names = "--top-p", paramLabel = "P", defaultValue = "1.0", description = "Nucleus sampling mass in (0, 1] (default ${DEFAULT-VALUE}).")
    double topP;

    @Option(names = "--seed", paramLabel = "S", defaultValue = "0", description = "Seed of the sampling generator; prompt i uses S + i (default ${DEFAULT-VALUE}).")
    long seed;

    @Option(names = "--stages", paramLabel = "P", defaultValue = "2", description = "Pipeline stages (default ${DEFAULT-VALUE}); at most the model's layers.")
    int stages;

    @Option(names = "--tensor-parallel", paramLabel = "T", defaultValue = "1",
            description = "Shard lanes per stage (default ${DEFAULT-VALUE}); must divide the model's heads, kv heads and intermediate size.")
    int tensorParallel;

    @Option(names = "--expert-parallel", paramLabel = "E", defaultValue = "1",
            description = "Expert lanes per stage of a mixture-of-experts model (default ${DEFAULT-VALUE}): each owns 1/E of every"
                    + " sparse layer's experts; rows travel by all-to-all. Must divide the experts; cpu backend.")
    int expertParallel;

    @Option(names = "--backend", paramLabel = "cpu|sim|gpu", defaultValue = "cpu",
            description = "cpu (default) computes the model; sim runs the same pipeline on the simulated device (timing only, placeholder tokens); "
                    + "gpu runs the stages on CUDA streams of --device (GpuNeuralOps, weights uploaded through the supervisor).")
    String backend;

    @Option(names = "--device", paramLabel = "N", defaultValue = "0", description = "gpu: the CUDA device, counted after CUDA_VISIBLE_DEVICES (default ${DEFAULT-VALUE}).")
    int device;

    @Option(names = "--weights", paramLabel = "stored|f32|bf16|q8", defaultValue = "stored", description = "How weights are held: stored (default; the checkpoint's dtype, F16/BF16 stay 16-bit), f32, bf16, or q8"
                    + " (8-bit blocks for the projection and MLP matrices). q8 is CPU only.")
    String weights;

    @Option(names = "--json", description = "Print one JSON object instead of streamed text.")
    boolean json;

    @Option(names = "--trace-html", paramLabel = "FILE", description = "Also write the trace as a self-contained HTML timeline.")
    Path traceHtml;

    @Mixin
    TraceOptions trace;

    @Mixin
    DeviceWeightsOptions deviceWeights = new DeviceWeightsOptions();

    @picocli.CommandLine.Spec
    picocli.CommandLine.Model.CommandSpec spec;

    /** Where results go: the command line's output (stdout, or what a test set). */
    PrintWriter out() {
        return spec.commandLine().getOut();
    }

    /** Where notes go: the command line's error stream. */
    PrintWriter err() {
        return spec.commandLine().getErr();
    }

    @Override
    public Integer call() throws Exception {
        if (maxNewTokens < 1) {
            throw new GraphlaneException("--max-new-tokens must be >= 1, got " + maxNewTokens);
        }
        if (stages < 1) {
            throw new GraphlaneException("--stages must be >= 1, got " + stages);
        }
        if (!backend.equals("cpu") && expertParallel != 1) {
            throw new GraphlaneException("--expert-parallel " + expertParallel + " needs --backend cpu");
        }
        if (!backend.equals("cpu") && tensorParallel != 1) {
            throw new GraphlaneException("--tensor-parallel " + tensorParallel + " needs --backend cpu (the " + backend + " run has no shards)");
        }
        switch (backend) {
            case "cpu":
                return runPipeline(null);
            case "sim":
                return SimRun.run(this);
            case "gpu":
                if (device < 0) {
                    throw new GraphlaneException("--device must be >= 0, got " + device);
                }
                // Opened first, so that where CUDA is not usable the run ends with one line naming what is missing
                // (driver, device, NVRTC, cuBLAS) before anything else is printed.
                return runPipeline(GpuInference.open(device, WeightFormat.parse("--weights", weights)));
            default:
                throw new GraphlaneException("--backend must be cpu, sim or gpu, got '" + backend + "'");
        }
    }

    /** Runs the pipeline on {@code opened} (which the pipeline then owns), or on the CPU when it is null. */
    private int runPipeline(InferenceBackend<?, ?, ?, ?, ?> opened) throws Exception {
        try {
            return runPipelineOn(opened);
        } finally {
            if (opened != null) {
                opened.close(); // idempotent: the pipeline closed it already unless the build failed before taking it
            }
        }
    }

    private int runPipelineOn(InferenceBackend<?, ?, ?, ?, ?> opened) throws Exception {
        PrintWriter out = out();
        TraceRecorder recorder = trace.enabled() ? trace.recorder() : new TraceBuffer(TraceOptions.DEFAULT_CAPACITY);
        boolean demo = model == null;
        if (demo && !json) {
            out.println("graphlane: demo model (Llama architecture, random weights from a fixed seed): its tokens are not meaningful text.");
            out.println("           Use --model DIR with a Hugging Face Llama, Mistral or Qwen2 directory for real output.");
        }
        InferencePipeline.Builder builder = InferencePipeline.builder().stages(stages).tensorParallel(tensorParallel).expertParallel(expertParallel).trace(recorder)
                .weights(WeightFormat.parse("--weights", weights));
        builder = opened == null ? builder.workTracing(TraceOptions.cpuWorkTracing()) : builder.backend(() -> opened);
        builder = demo ? builder.demoModel() : builder.model(model);
        builder = deviceWeights.apply(builder, line -> err().println("graphlane: " + line));
        InferencePipeline pipeline;
        if (json) {
            pipeline = builder.build();
        } else {
            try (ProgressBar bar = new ProgressBarBuilder().setTaskName("loading stages").setInitialMax(stages)
                    .setStyle(ProgressBarStyle.ASCII).setConsumer(new me.tongfei.progressbar.ConsoleProgressBarConsumer(System.err)).build()) {
                pipeline = builder.onStageLoaded(s -> bar.step()).build();
            }
        }
        try (InferencePipeline p = pipeline) {
            List<List<Integer>> promptList = prompts(p);
            List<GenerationRequest> requests = new ArrayList<>();
            for (int i = 0; i < promptList.size(); i++) {
                requests.add(new GenerationRequest(promptList.get(i), maxNewTokens, new SamplingParams(temperature, topP, seed + i), Optional.empty()));
            }
            long start = System.nanoTime();
            List<GenerationResult> results = json ? p.generateAll(requests, java.time.Duration.ofHours(1)) : streamAll(p, requests, out);
            double wall = (System.nanoTime() - start) / 1e9;
            int generated = results.stream().mapToInt(r -> r.generatedIds().size()).sum();
            LaneTimeline timeline = LaneTimeline.fromEvents(recorder.events());
            if (json) {
                printJson(p, results, generated / wall, wall, timeline);
            } else {
                printSummary(out, p, generated, wall, timeline);
                out.flush();
            }
            writeTraces(recorder, timeline);
            return 0;
        }
    }

    private List<List<Integer>> prompts(InferencePipeline p) {
        List<List<Integer>> out = new ArrayList<>();
        for (String text : prompts) {
            out.add(toList(p.tokenizer().encode(text)));
        }
        for (String ids : promptIds) {
            out.add(parseIds(ids));
        }
        if (out.isEmpty()) {
            for (String text : DEFAULT_PROMPTS) {
                out.add(toList(p.tokenizer().encode(text)));
            }
        }
        for (int i = 0; i < out.size(); i++) {
            if (out.get(i).isEmpty()) {
                throw new GraphlaneException("prompt " + i + " encodes to no tokens; give some text or --prompt-ids");
            }
        }
        return out;
    }

    /** Parses {@code 1,2,3}; names the bad piece. */
    static List<Integer> parseIds(String ids) {
        List<Integer> list = new ArrayList<>();
        for (String piece : ids.split(",")) {
            String t = piece.trim();
            if (t.isEmpty()) {
                continue;
            }
            try {
                int id = Integer.parseInt(t);
                if (id < 0) {
                    throw new NumberFormatException();
                }
                list.add(id);
            } catch (NumberFormatException e) {
                throw new GraphlaneException("--prompt-ids '" + ids + "': '" + t + "' is not a non-negative token id");
            }
        }
        if (list.isEmpty()) {
            throw new GraphlaneException("--prompt-ids '" + ids + "' holds no token id");
        }
        return list;
    }

    private static List<Integer> toList(int[] a) {
        List<Integer> l = new ArrayList<>(a.length);
        for (int v : a) {
            l.add(v);
        }
        return l;
    }

    /**
     * Runs every request at once and prints them one after another: the request being printed
     * streams live; the text of later ones (generated meanwhile) is printed when their turn comes.
     */
    private static List<GenerationResult> streamAll(InferencePipeline p, List<GenerationRequest> requests, PrintWriter out) throws Exception {
        int n = requests.size();
        List<StringBuilder> pending = new ArrayList<>();
        List<CompletableFuture<GenerationResult>> results = new ArrayList<>();
        Object lock = new Object();
        int[] printing = {0};
        for (int i = 0; i < n; i++) {
            pending.add(new StringBuilder());
        }
        for (int i = 0; i < n; i++) {
            int index = i;
            StreamingDecoder decoder = p.tokenizer().streamingDecoder();
            results.add(p.submit(requests.get(i), new GenerationListener() {
                @Override
                public void onToken(int tokenId) {
                    String piece = decoder.next(tokenId);
                    synchronized (lock) {
                        if (printing[0] == index) {
                            out.print(printable(piece));
                            out.flush();
                        } else {
                            pending.get(index).append(piece);
                        }
                    }
                }

                @Override
                public void onFinished(io.graphlane.inference.api.FinishReason reason) {
                    String rest = decoder.flush();
                    synchronized (lock) {
                        pending.get(index).append(rest);
                    }
                }
            }).result().toCompletableFuture());
        }
        for (int i = 0; i < n; i++) {
            synchronized (lock) {
                printing[0] = i;
                out.print("\n[" + i + "] " + printable(p.tokenizer().decode(requests.get(i).promptIds())) + " \u2192 ");
                out.print(printable(pending.get(i).toString()));
                pending.get(i).setLength(0);
                out.flush();
            }
            results.get(i).get(1, TimeUnit.HOURS);
            synchronized (lock) {
                out.print(printable(pending.get(i).toString()));
                pending.get(i).setLength(0);
                printing[0] = -1;
            }
        }
        out.println();
        out.flush();
        List<GenerationResult> all = new ArrayList<>();
        for (CompletableFuture<GenerationResult> r : results) {
            all.add(r.join());
        }
        return all;
    }

    /** Control characters (random demo tokens produce many) are shown escaped so they cannot garble the terminal. */
    static String printable(String s) {
        StringBuilder b = new StringBuilder(s.length());
        s.codePoints().forEach(cp -> {
            if (cp == '\n') {
                b.append("\\n");
            } else if (Character.isISOControl(cp)) {
                b.append(String.format(Locale.ROOT, "\\x%02x", cp & 0xff));
            } else {
                b.appendCodePoint(cp);
            }
        });
        return b.toString();
    }

    private void printSummary(PrintWriter out, InferencePipeline p, int generated, double wall, LaneTimeline timeline) {
        out.printf(Locale.ROOT, "%n%d tokens in %.2f s: %.1f tokens/s over %d stage(s)%s%n", generated, wall, generated / wall, stages,
                backend.equals("cpu") ? "" : " on " + p.backendDescription());
        for (LaneTimeline.LaneStats s : timeline.stats()) {
            out.printf(Locale.ROOT, "  %-10s busy %5.1f %%   bubble %5.1f %%   (%d steps)%n", s.lane(), 100 * s.busyFraction(),
                    100 * (1 - s.busyFraction()), s.workItems());
        }
    }

    private void printJson(InferencePipeline p, List<GenerationResult> results, double tokensPerSecond, double wall, LaneTimeline timeline) {
        ObjectMapper m = new ObjectMapper();
        ObjectNode root = m.createObjectNode();
        root.put("model", p.modelName());
        root.put("stages", stages);
        root.put("tensor_parallel", tensorParallel);
        root.put("expert_parallel", expertParallel);
        root.put("backend", p.backendDescription());
        ArrayNode reqs = root.putArray("requests");
        for (GenerationResult r : results) {
            ObjectNode o = reqs.addObject();
            ArrayNode prompt = o.putArray("prompt_ids");
            r.promptIds().forEach(prompt::add);
            ArrayNode gen = o.putArray("generated_ids");
            r.generatedIds().forEach(gen::add);
            o.put("text", p.tokenizer().decode(r.generatedIds()));
        }
        root.put("tokens_per_s", tokensPerSecond);
        root.put("wall_s", wall);
        ArrayNode busy = root.putArray("stage_busy");
        for (LaneTimeline.LaneStats s : timeline.stats()) {
            busy.addObject().put("lane", s.lane()).put("busy_fraction", s.busyFraction());
        }
        out().println(root);
        out().flush();
    }

    void writeTraces(TraceRecorder recorder, LaneTimeline timeline) throws java.io.IOException {
        if (trace.enabled()) {
            trace.write(recorder);
            if (!json) {
                err().println("trace written to " + trace.file());
                err().flush();
            }
        }
        if (traceHtml != null) {
            Files.writeString(traceHtml, TimelineHtml.render(timeline, "graphlane run"), StandardCharsets.UTF_8);
            if (!json) {
                err().println("timeline written to " + traceHtml);
                err().flush();
            }
        }
    }
}
