package io.graphlane.inference.gguf;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.graphlane.backend.cpu.nn.CpuTensor;
import io.graphlane.checkpoint.CheckpointSource;
import io.graphlane.checkpoint.gguf.GgmlType;
import io.graphlane.checkpoint.gguf.GgufCheckpoint;
import io.graphlane.checkpoint.gguf.TinyLlamaGguf;
import io.graphlane.checkpoint.recipe.DerivedWeight;
import io.graphlane.checkpoint.recipe.Recipe;
import io.graphlane.checkpoint.safetensors.SafetensorsWriter;
import io.graphlane.core.tensor.DType;
import io.graphlane.inference.api.GenerationRequest;
import io.graphlane.inference.api.GenerationResult;
import io.graphlane.inference.generate.SequentialGenerator;
import io.graphlane.inference.generate.SequentialRequest;
import io.graphlane.inference.generate.StagedModel;
import io.graphlane.inference.llama.Segment;
import io.graphlane.inference.model.CpuModels;
import io.graphlane.inference.model.Fixture;
import io.graphlane.inference.model.ModelDirectory;
import io.graphlane.inference.pipeline.InferencePipeline;
import io.graphlane.inference.sampling.SamplingParams;
import io.graphlane.inference.stage.StagePlan;
import io.graphlane.inference.tensorparallel.TensorParallelStage;
import io.graphlane.inference.tensorparallel.TensorParallelStages;
import io.graphlane.inference.weights.WeightFormat;
import io.graphlane.inference.weights.WeightPlan;
import io.graphlane.inference.llama.LlamaTensors;
import io.graphlane.checkpoint.recipe.BlockQ8;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The tiny-llama fixture written as GGUF (llama.cpp's names, permuted q/k rows, metadata, gpt2 tokenizer) at F32, F16,
 * BF16, Q8_0 and Q4_0, loaded through {@link ModelDirectory}: F32 against the PyTorch reference, every type against the
 * same model written as safetensors with the values its blocks decode to (the dequantize-then-F32 path), on 1 and 2
 * stages, the actor pipeline and tensor parallel 2. The fixture's rows are 64 values (and 172 in {@code down_proj}, kept
 * F32 as llama.cpp keeps a row that is not whole blocks), so a Q4_K file (256-value blocks) would hold no Q4_K tensor;
 * its decoding is checked in the checkpoint module.
 */
class GgufModelTest {
    private static final float F32_TOLERANCE = 1e-4f;
    /** Two loads of the same F32 weights: only the order of the CPU kernels' parallel sums may differ. */
    private static final float SUM_ORDER = 1e-5f;
    private static final ActorTestKit TESTKIT = ActorTestKit.create();

    /** How far each type's logits may be from the F32 reference, as measured on this fixture with some margin. */
    private static final Map<GgmlType, Float> REFERENCE_TOLERANCE = new EnumMap<>(Map.of(
            GgmlType.F32, F32_TOLERANCE, GgmlType.F16, 1e-2f, GgmlType.BF16, 6e-2f, GgmlType.Q8_0, 0.15f, GgmlType.Q4_0, 2.0f));

    @TempDir
    static Path tmp;

    @AfterAll
    static void stopActors() {
        TESTKIT.shutdownTestKit();
    }

    private static synchronized Path gguf(GgmlType type) {
        Path file = tmp.resolve(type.name()).resolve("tiny-llama-" + type.name().toLowerCase() + ".gguf");
        return Files.exists(file) ? file : TinyLlamaGguf.write(type, file);
    }

    /**
     * The same model as a safetensors directory: every Hugging Face weight the GGUF file derives, evaluated to F32 (the
     * values its blocks decode to, q/k rows in Hugging Face's order), with the config.json and tokenizer.json its metadata
     * gives.
     */
    private static synchronized Path decodedSafetensors(GgmlType type) {
        Path dir = tmp.resolve(type.name() + "-decoded");
        if (Files.exists(dir.resolve("model.safetensors"))) {
            return dir;
        }
        GgufCheckpoint g = GgufCheckpoint.open(gguf(type));
        SafetensorsWriter w = new SafetensorsWriter();
        ObjectMapper json = new ObjectMapper();
        try (CheckpointSource source = g.openSource()) {
            Files.createDirectories(dir);
            json.writeValue(dir.resolve("config.json").toFile(), g.hfConfig(source));
            json.writeValue(dir.resolve("tokenizer.json").toFile(), g.tokenizerJson());
            for (Map.Entry<String, DerivedWeight> e : g.weights(source).entrySet()) {
                Recipe r = e.getValue().recipe();
                DerivedWeight f32 = DerivedWeight.of(e.getKey(), r.spec().dtype() == DType.F32 ? r : r.cast(DType.F32));
                ByteBuffer b = f32.evaluateToBuffer().order(ByteOrder.LITTLE_ENDIAN);
                float[] v = new float[b.remaining() / 4];
                b.asFloatBuffer().get(v);
                w.addF32(e.getKey(), f32.output().shape().dims(), v);
            }
            w.write(dir.resolve("model.safetensors"));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return dir;
    }

    private static List<float[]> lastLogits(ModelDirectory dir, int stages, WeightFormat format) {
        List<float[]> out = new ArrayList<>();
        try (StagedModel<CpuTensor> model = CpuModels.staged(dir, stages, format)) {
            long id = 1;
            for (Fixture.Prompt p : Fixture.prompts()) {
                out.add(model.step(List.of(new Segment(id, 0, p.ids().length)), p.ids())[0]);
                model.endRequest(id++);
            }
        }
        return out;
    }

    @ParameterizedTest(name = "{0} stage(s)")
    @ValueSource(ints = {1, 2})
    void f32FileMatchesTheReferenceAndItsGreedyTokens(int stages) {
        ModelDirectory dir = ModelDirectory.open(gguf(GgmlType.F32));
        assertTrue(dir.isGguf());
        assertEquals(4, dir.config().layerCount());
        List<float[]> logits = lastLogits(dir, stages, WeightFormat.F32);
        List<Fixture.Prompt> prompts = Fixture.prompts();
        List<SequentialRequest> requests = new ArrayList<>();
        for (int i = 0; i < prompts.size(); i++) {
            float worst = Fixture.maxAbsDifference(prompts.get(i).lastLogitsF32(), logits.get(i));
            assertTrue(worst <= F32_TOLERANCE, "prompt " + i + ", " + stages + " stage(s): last logits off by " + worst);
            requests.add(new SequentialRequest(prompts.get(i).ids(), 16, SamplingParams.GREEDY));
        }
        try (StagedModel<CpuTensor> model = CpuModels.staged(dir, stages, WeightFormat.STORED)) {
            List<int[]> tokens = SequentialGenerator.generate(model, requests);
            for (int i = 0; i < prompts.size(); i++) {
                assertArrayEquals(prompts.get(i).greedy16(), tokens.get(i), "greedy tokens of prompt " + i + ", " + stages + " stage(s)");
            }
        }
    }

    /** Loaded in F32, every type's logits are those of its decoded values written as safetensors (up to the order of the kernels' sums). */
    @ParameterizedTest(name = "{0}")
    @EnumSource(value = GgmlType.class, names = {"F16", "BF16", "Q8_0", "Q4_0"})
    void f32LoadEqualsTheDecodedSafetensors(GgmlType type) {
        List<float[]> fromGguf = lastLogits(ModelDirectory.open(gguf(type)), 2, WeightFormat.F32);
        List<float[]> fromSafetensors = lastLogits(ModelDirectory.open(decodedSafetensors(type)), 2, WeightFormat.F32);
        for (int i = 0; i < fromGguf.size(); i++) {
            // the same F32 weights; the CPU kernels' parallel sums may split differently from one run to the next
            float worst = Fixture.maxAbsDifference(fromSafetensors.get(i), fromGguf.get(i));
            assertTrue(worst <= SUM_ORDER, type + ", prompt " + i + ": " + worst + " from the decoded safetensors");
        }
    }

    /**
     * As stored (Q8_0 matrices repacked into the q8 kernel's layout, nothing re-quantized; the other blocks, and a
     * quantized embedding and head, decoded into BF16; F16 and BF16 as they are): near the decoded values in F32 (within
     * the kernels' rounding where the weights keep their values, within BF16's rounding where blocks are held in BF16),
     * and within the type's stated tolerance of the PyTorch reference.
     */
    @ParameterizedTest(name = "{0}")
    @EnumSource(value = GgmlType.class, names = {"F32", "F16", "BF16", "Q8_0", "Q4_0"})
    void storedFormatStaysNearTheDecodedValuesAndTheReference(GgmlType type) {
        List<float[]> stored = lastLogits(ModelDirectory.open(gguf(type)), 1, WeightFormat.STORED);
        List<float[]> decoded = lastLogits(ModelDirectory.open(decodedSafetensors(type)), 1, WeightFormat.F32);
        float toDecodedTolerance = type.isQuantized() ? 5e-2f : SUM_ORDER;
        List<Fixture.Prompt> prompts = Fixture.prompts();
        float worstToDecoded = 0;
        float worstToReference = 0;
        for (int i = 0; i < stored.size(); i++) {
            worstToDecoded = Math.max(worstToDecoded, Fixture.maxAbsDifference(decoded.get(i), stored.get(i)));
            worstToReference = Math.max(worstToReference, Fixture.maxAbsDifference(prompts.get(i).lastLogitsF32(), stored.get(i)));
        }
        System.out.printf("%s as stored: %.3g from the decoded values, %.3g from the reference%n", type, worstToDecoded, worstToReference);
        assertTrue(worstToDecoded <= toDecodedTolerance, type + ": " + worstToDecoded + " from the decoded values in F32");
        assertTrue(worstToReference <= REFERENCE_TOLERANCE.get(type), type + ": " + worstToReference + " from the reference");
    }

    /**
     * The Q8_0 repack holds exactly the values the blocks decode to: for every layer matrix, scale × q of the q8 layout
     * equals the dequantized F32 value bit for bit (the F16 scale widened to F32 is exact, and both multiply the same
     * two floats), so the q8 kernel computes on the decoded weights.
     */
    @Test
    void q80RepackHoldsExactlyTheDecodedValues() {
        ModelDirectory dir = ModelDirectory.open(gguf(GgmlType.Q8_0));
        int matrices = 0;
        try (CheckpointSource source = dir.openSource(1)) {
            for (LlamaTensors.Expected e : LlamaTensors.forStage(dir.config(), StagePlan.balanced(dir.config().layerCount(), 1).stages().get(0))) {
                WeightPlan plan = WeightPlan.of(source, e, WeightFormat.STORED, true);
                Recipe recipe = plan.recipe().orElseThrow().recipe();
                if (!(recipe instanceof Recipe.RepackQ8)) {
                    continue;
                }
                matrices++;
                ByteBuffer q8 = plan.recipe().get().evaluateToBuffer().order(ByteOrder.LITTLE_ENDIAN);
                ByteBuffer f32 = DerivedWeight.of(e.name(), source.recipe(e.name())).evaluateToBuffer().order(ByteOrder.LITTLE_ENDIAN);
                int cols = e.cols();
                int rowBytes = (int) BlockQ8.rowBytes(cols);
                for (int r = 0; r < e.rows(); r++) {
                    for (int c = 0; c < cols; c++) {
                        float scale = q8.getFloat(q8.position() + r * rowBytes + cols + (c / BlockQ8.BLOCK) * Float.BYTES);
                        float value = scale * q8.get(q8.position() + r * rowBytes + c);
                        float decoded = f32.getFloat(f32.position() + (r * cols + c) * Float.BYTES);
                        if (Float.floatToRawIntBits(value) != Float.floatToRawIntBits(decoded)) {
                            throw new AssertionError(e.name() + " [" + r + ", " + c + "]: repacked " + value + ", decoded " + decoded);
                        }
                    }
                }
            }
        }
        assertEquals(4 * 6, matrices, "the q, k, v, o, gate and up matrices of 4 layers (down's 172 columns are not whole blocks)");
    }

    /** {@code --weights q8} on a Q8_0 file repacks too: the same logits as the stored format. */
    @Test
    void q8OnAQ80FileIsTheRepack() {
        ModelDirectory dir = ModelDirectory.open(gguf(GgmlType.Q8_0));
        List<float[]> stored = lastLogits(dir, 2, WeightFormat.STORED);
        List<float[]> q8 = lastLogits(dir, 2, WeightFormat.Q8);
        for (int i = 0; i < stored.size(); i++) {
            assertArrayEquals(stored.get(i), q8.get(i), "prompt " + i);
        }
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(value = GgmlType.class, names = {"F32", "Q4_0"})
    void tensorParallelTwoShardsTheDerivedWeights(GgmlType type) {
        ModelDirectory dir = ModelDirectory.open(gguf(type));
        List<float[]> decoded = lastLogits(ModelDirectory.open(decodedSafetensors(type)), 1, WeightFormat.F32);
        List<TensorParallelStage<CpuTensor>> stages = TensorParallelStages.load(dir, StagePlan.balanced(dir.config().layerCount(), 1), 2,
                s -> { });
        try {
            long id = 3_000;
            List<Fixture.Prompt> prompts = Fixture.prompts();
            for (int i = 0; i < prompts.size(); i++) {
                int[] ids = prompts.get(i).ids();
                float[] last = StagedModel.step(stages, List.of(new Segment(id, 0, ids.length)), ids)[0];
                long done = id++;
                stages.forEach(s -> s.endRequest(done));
                float worst = Fixture.maxAbsDifference(decoded.get(i), last);
                assertTrue(worst <= F32_TOLERANCE, type + ", prompt " + i + ", tensor parallel 2: " + worst + " from the decoded values");
            }
        } finally {
            stages.forEach(TensorParallelStage::close);
        }
    }

    @Test
    void actorPipelineOfTwoStagesGivesTheReferenceGreedyTokens() throws Exception {
        try (InferencePipeline model = InferencePipeline.builder().model(gguf(GgmlType.F32).getParent()).stages(2)
                .actorSystem(TESTKIT.system()).build()) {
            assertEquals("tiny-llama-f32", model.modelName());
            List<GenerationRequest> requests = new ArrayList<>();
            for (Fixture.Prompt p : Fixture.prompts()) {
                requests.add(GenerationRequest.greedy(list(p.ids()), 16));
            }
            List<GenerationResult> results = model.generateAll(requests, Duration.ofSeconds(120));
            for (int i = 0; i < requests.size(); i++) {
                assertEquals(list(Fixture.prompts().get(i).greedy16()), results.get(i).generatedIds(), "prompt " + i);
            }
        }
    }

    @Test
    void actorPipelineWithTensorParallelTwoOnAQuantizedFile() throws Exception {
        List<float[]> unused = List.of();
        try (InferencePipeline model = InferencePipeline.builder().model(gguf(GgmlType.Q8_0)).stages(1).tensorParallel(2)
                .actorSystem(TESTKIT.system()).build();
             StagedModel<CpuTensor> sequential = CpuModels.staged(ModelDirectory.open(decodedSafetensors(GgmlType.Q8_0)), 1, WeightFormat.F32)) {
            List<GenerationRequest> requests = new ArrayList<>();
            List<SequentialRequest> same = new ArrayList<>();
            for (Fixture.Prompt p : Fixture.prompts()) {
                requests.add(GenerationRequest.greedy(list(p.ids()), 8));
                same.add(new SequentialRequest(p.ids(), 8, SamplingParams.GREEDY));
            }
            List<GenerationResult> results = model.generateAll(requests, Duration.ofSeconds(120));
            List<int[]> expected = SequentialGenerator.generate(sequential, same);
            for (int i = 0; i < requests.size(); i++) {
                assertEquals(list(expected.get(i)), results.get(i).generatedIds(), "prompt " + i);
            }
            assertTrue(unused.isEmpty());
        }
    }

    private static List<Integer> list(int[] a) {
        List<Integer> l = new ArrayList<>();
        for (int v : a) {
            l.add(v);
        }
        return l;
    }
}
