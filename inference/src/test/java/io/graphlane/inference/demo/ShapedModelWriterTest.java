package io.graphlane.inference.demo;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.graphlane.backend.cpu.nn.CpuTensor;
import io.graphlane.checkpoint.CheckpointSource;
import io.graphlane.checkpoint.Selection;
import io.graphlane.checkpoint.config.RopeConfig;
import io.graphlane.core.GraphlaneException;
import io.graphlane.core.tensor.DType;
import io.graphlane.inference.generate.StagedModel;
import io.graphlane.inference.llama.LlamaConfig;
import io.graphlane.inference.llama.Segment;
import io.graphlane.inference.model.CpuModels;
import io.graphlane.inference.model.ModelDirectory;
import io.graphlane.inference.tokenizer.TextTokenizer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code demo-model --shape}: the real shapes' configs, and a written model of a (narrowed) real shape loads and runs. */
class ShapedModelWriterTest {

    /** Qwen2.5-0.5B's config with its widths and vocabulary narrowed, so the test writes kilobytes, not a gigabyte. */
    private static ObjectNode smallQwen() {
        ObjectNode c = DemoShape.QWEN2_5_0_5B.config("bfloat16");
        c.put("hidden_size", 64).put("intermediate_size", 96).put("num_hidden_layers", 2).put("num_attention_heads", 4)
                .put("num_key_value_heads", 2).put("vocab_size", 300).put("bos_token_id", 299).put("eos_token_id", 299);
        return c;
    }

    @Test
    void theRealShapesReadAsThePublishedModels(@TempDir Path root) throws Exception {
        LlamaConfig qwen = configOf(root, DemoShape.QWEN2_5_0_5B);
        assertEquals(List.of(896, 4864, 24, 14, 2, 64, 151936), List.of(qwen.hiddenSize(), qwen.intermediateSize(), qwen.layerCount(),
                qwen.headCount(), qwen.kvHeadCount(), qwen.headDim(), qwen.vocabSize()));
        assertTrue(qwen.tieWordEmbeddings() && qwen.qkvBias() && !qwen.outputBias());
        LlamaConfig small = configOf(root, DemoShape.LLAMA_3_2_1B);
        assertEquals(List.of(2048, 8192, 16, 32, 8, 64, 128256), List.of(small.hiddenSize(), small.intermediateSize(), small.layerCount(),
                small.headCount(), small.kvHeadCount(), small.headDim(), small.vocabSize()));
        assertTrue(small.tieWordEmbeddings() && !small.qkvBias());
        assertEquals(RopeConfig.Type.LLAMA3, small.rope().type());
        assertEquals(500000f, small.ropeTheta());
        LlamaConfig large = configOf(root, DemoShape.LLAMA_3_1_8B);
        assertEquals(List.of(4096, 14336, 32, 32, 8, 128, 128256), List.of(large.hiddenSize(), large.intermediateSize(), large.layerCount(),
                large.headCount(), large.kvHeadCount(), large.headDim(), large.vocabSize()));
        assertFalse(large.tieWordEmbeddings());
        assertEquals(RopeConfig.Type.LLAMA3, large.rope().type());
        assertEquals(DemoModel.CONFIG, configOf(root, DemoShape.DEMO));
    }

    private static LlamaConfig configOf(Path root, DemoShape shape) throws Exception {
        Path file = root.resolve(shape.cliName() + ".json");
        Files.writeString(file, shape.config("bfloat16").toPrettyString());
        return ModelDirectory.toLlama(io.graphlane.checkpoint.config.ModelConfig.read(file));
    }

    @Test
    void aWrittenQwenShapeLoadsWithItsBiasesAndTiedHeadAndRuns(@TempDir Path root) {
        ShapedModelWriter.Written written = ShapedModelWriter.write(root.resolve("qwen"), smallQwen(), false, "qwen-small", DType.BF16, 3);
        assertFalse(written.reused());
        ModelDirectory model = ModelDirectory.open(written.dir());
        assertTrue(model.config().qkvBias() && model.config().tieWordEmbeddings());
        try (CheckpointSource source = model.openSource(CheckpointSource.DEFAULT_MAX_OPEN_SHARDS)) {
            assertEquals(DType.BF16, source.spec("model.layers.1.self_attn.q_proj.bias", Selection.all()).dtype());
        }
        float[] logits;
        try (StagedModel<CpuTensor> staged = CpuModels.staged(model, 1)) {
            logits = staged.step(List.of(new Segment(1, 0, 3)), new int[] {5, 280, 7})[0];
        }
        assertEquals(300, logits.length);
        assertTrue(java.util.stream.IntStream.range(0, logits.length).allMatch(i -> Float.isFinite(logits[i])), "finite logits");
        assertNotEquals(logits[0], logits[1], "random weights give distinct logits");
        try (TextTokenizer tokenizer = model.tokenizer()) {
            assertArrayEquals(new int[] {104, 105}, tokenizer.encode("hi"), "bytes encode as themselves");
            assertEquals("<280>", tokenizer.decode(new int[] {280}), "every id of the vocabulary decodes");
        }
    }

    @Test
    void theSameSeedWritesTheSameBytesAndARerunFindsTheModel(@TempDir Path root) throws Exception {
        Path a = ShapedModelWriter.write(root.resolve("a"), smallQwen(), false, "qwen-small", DType.F32, 9).dir();
        Path b = ShapedModelWriter.write(root.resolve("b"), smallQwen(), false, "qwen-small", DType.F32, 9).dir();
        Path c = ShapedModelWriter.write(root.resolve("c"), smallQwen(), false, "qwen-small", DType.F32, 10).dir();
        byte[] weights = Files.readAllBytes(a.resolve("model.safetensors"));
        assertArrayEquals(weights, Files.readAllBytes(b.resolve("model.safetensors")));
        assertFalse(java.util.Arrays.equals(weights, Files.readAllBytes(c.resolve("model.safetensors"))), "another seed, other weights");
        assertTrue(ShapedModelWriter.write(a, smallQwen(), false, "qwen-small", DType.F32, 9).reused());
        GraphlaneException other = assertThrows(GraphlaneException.class,
                () -> ShapedModelWriter.write(a, smallQwen(), false, "qwen-small", DType.BF16, 9));
        assertTrue(other.getMessage().contains(a.toString()) && other.getMessage().contains("remove it"), other.getMessage());
        try (var entries = Files.list(root)) {
            assertEquals(3, entries.count(), "no staging directory left behind");
        }
    }

    @Test
    void aModelPastTheShardSizeIsWrittenAsShardsWithAnIndexAndRunsAsOneFile(@TempDir Path root) throws Exception {
        Path whole = ShapedModelWriter.write(root.resolve("whole"), smallQwen(), false, "qwen-small", DType.BF16, 4).dir();
        Path sharded = ShapedModelWriter.write(root.resolve("sharded"), smallQwen(), false, "qwen-small", DType.BF16, 4, 40_000).dir();
        assertTrue(Files.isRegularFile(sharded.resolve("model.safetensors.index.json")));
        try (var files = Files.list(sharded)) {
            List<String> shards = files.map(f -> f.getFileName().toString()).filter(n -> n.endsWith(".safetensors")).sorted().toList();
            assertTrue(shards.size() >= 4 && shards.get(0).equals("model-00001-of-" + String.format("%05d", shards.size()) + ".safetensors"),
                    "162 kB in shards of at most 40 kB: " + shards);
        }
        int[] prompt = {1, 2, 3};
        try (StagedModel<CpuTensor> a = CpuModels.staged(ModelDirectory.open(whole), 1);
             StagedModel<CpuTensor> b = CpuModels.staged(ModelDirectory.open(sharded), 1)) {
            assertArrayEquals(a.step(List.of(new Segment(1, 0, 3)), prompt)[0], b.step(List.of(new Segment(1, 0, 3)), prompt)[0], 0f);
        }
    }

    @Test
    void theDemoShapeIsTheBuiltInDemoModel(@TempDir Path root) throws Exception {
        Path shaped = ShapedModelWriter.write(root.resolve("shaped"), DemoShape.DEMO, DType.BF16, DemoModel.SEED).dir();
        Path builtIn = root.resolve("built-in");
        Files.createDirectories(builtIn);
        DemoModel.write(builtIn, DemoModel.CONFIG, DemoModel.SEED, DType.BF16);
        assertArrayEquals(Files.readAllBytes(builtIn.resolve("model.safetensors")), Files.readAllBytes(shaped.resolve("model.safetensors")));
        assertEquals(DemoModel.CONFIG, ModelDirectory.open(shaped).config());
    }

    @Test
    void anUnknownShapeIsRefusedListingTheShapes() {
        GraphlaneException e = assertThrows(GraphlaneException.class, () -> DemoShape.of("llama-9"));
        assertTrue(e.getMessage().contains("llama-9") && e.getMessage().contains("qwen2.5-0.5b"), e.getMessage());
    }
}
