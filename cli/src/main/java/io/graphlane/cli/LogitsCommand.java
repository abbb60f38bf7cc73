package io.graphlane.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.graphlane.backend.cpu.nn.CpuNeuralBackend;
import io.graphlane.backend.cpu.nn.CpuTensor;
import io.graphlane.core.GraphlaneException;
import io.graphlane.inference.generate.StagedModel;
import io.graphlane.inference.llama.Segment;
import io.graphlane.inference.model.CpuModels;
import io.graphlane.inference.model.ModelDirectory;
import io.graphlane.inference.stage.StagePlan;
import io.graphlane.inference.tensorparallel.TensorParallelStage;
import io.graphlane.inference.tensorparallel.TensorParallelStages;
import io.graphlane.inference.weights.WeightFormat;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code graphlane logits}: the logits at the last position of a prompt, through the model split into stages, each stage
 * optionally split over tensor-parallel shards.
 */
@Command(name = "logits", mixinStandardHelpOptions = true,
        description = "Print the logits at the last position of a prompt (token ids), computed through the model split into stages"
                + " (and each stage into --tensor-parallel shards).")
public final class LogitsCommand implements Callable<Integer> {

    @Option(names = "--model", paramLabel = "MODEL", required = true, description = "A Hugging Face model directory, a GGUF file, or a directory holding exactly one.")
    Path model;

    @Option(names = "--ids", paramLabel = "IDS", required = true, description = "The prompt as comma-separated token ids.")
    String ids;

    @Option(names = "--stages", paramLabel = "P", defaultValue = "1", description = "Pipeline stages (default ${DEFAULT-VALUE}).")
    int stages;

    @Option(names = "--tensor-parallel", paramLabel = "T", defaultValue = "1",
            description = "Shard lanes per stage (default ${DEFAULT-VALUE}); must divide the model's heads, kv heads and intermediate size.")
    int tensorParallel;

    @Option(names = "--weights", paramLabel = "stored|f32|bf16|q8", defaultValue = "stored", description = "How weights are held, as in run:"
            + " stored (default; the checkpoint's dtype: F16/BF16 read in place from the memory-mapped file when java runs with"
            + " --add-modules jdk.incubator.vector, else widened to F32), f32, bf16 (16-bit with or without it), or q8 (8-bit blocks"
            + " for the projection and MLP matrices). With --tensor-parallel above 1: stored or f32 (the shards hold F32).")
    String weights;

    @Option(names = "--json", description = "Print one JSON object: {\"ids\":[…],\"stages\":P,\"tensor_parallel\":T,\"last_logits\":[…]}.")
    boolean json;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() {
        List<Integer> prompt = RunCommand.parseIds(ids);
        WeightFormat format = WeightFormat.parse("--weights", weights);
        format.requireTensorParallel(tensorParallel);
        ModelDirectory dir = ModelDirectory.open(model);
        int vocab = dir.config().vocabSize();
        for (int id : prompt) {
            if (id >= vocab) {
                throw new GraphlaneException("--ids: token id " + id + " is outside the vocabulary [0, " + vocab + ") of " + model);
            }
        }
        if (prompt.size() > dir.config().maxPositions()) {
            throw new GraphlaneException("--ids: " + prompt.size() + " token ids are more than the model's maximum of "
                    + dir.config().maxPositions() + " positions (max_position_embeddings of " + dir.configFile() + ")");
        }
        if (stages < 1 || stages > dir.config().layerCount()) {
            throw new GraphlaneException("--stages must be between 1 and the model's " + dir.config().layerCount() + " layers, got " + stages);
        }
        int[] tokens = prompt.stream().mapToInt(Integer::intValue).toArray();
        List<Segment> segments = List.of(new Segment(1, 0, tokens.length));
        float[] logits = tensorParallel == 1 ? staged(dir, format, segments, tokens) : tensorParallel(dir, segments, tokens);
        var out = spec.commandLine().getOut();
        if (json) {
            ObjectNode o = new ObjectMapper().createObjectNode();
            ArrayNode a = o.putArray("ids");
            prompt.forEach(a::add);
            o.put("stages", stages);
            o.put("tensor_parallel", tensorParallel);
            ArrayNode l = o.putArray("last_logits");
            for (float v : logits) {
                l.add(v);
            }
            out.println(o);
        } else {
            int best = 0;
            for (int i = 1; i < logits.length; i++) {
                if (logits[i] > logits[best]) {
                    best = i;
                }
            }
            out.printf(Locale.ROOT, "%d logits at position %d over %d stage(s) x %d shard(s); argmax %d (%.5f)%n", logits.length,
                    prompt.size() - 1, stages, tensorParallel, best, logits[best]);
        }
        out.flush();
        return 0;
    }

    /**
     * The logits through the model's stages, each on the calling thread, their weights loaded as {@code run} loads them
     * (through the materialization supervisor, held in {@code format}).
     */
    private float[] staged(ModelDirectory dir, WeightFormat format, List<Segment> segments, int[] tokens) {
        try (StagedModel<CpuTensor> staged = CpuModels.supervised(dir, stages, format)) {
            return staged.step(segments, tokens)[0];
        }
    }

    /**
     * The logits through the model's stages, each split over {@code --tensor-parallel} shards whose works (partial
     * projections, then the reduces that sum them) run in plan order on the calling thread: the same works
     * {@code run --tensor-parallel} runs on the shard lanes. A degree that is below 1 or does not divide the model's
     * heads, kv heads or intermediate size is refused naming them, before anything is loaded.
     */
    private float[] tensorParallel(ModelDirectory dir, List<Segment> segments, int[] tokens) {
        CpuNeuralBackend.setBlasThreads(1);
        List<TensorParallelStage<CpuTensor>> sharded = TensorParallelStages.load(dir, StagePlan.balanced(dir.config().layerCount(), stages),
                tensorParallel, loaded -> { });
        try {
            return StagedModel.step(sharded, segments, tokens)[0];
        } finally {
            sharded.forEach(TensorParallelStage::close);
        }
    }
}
