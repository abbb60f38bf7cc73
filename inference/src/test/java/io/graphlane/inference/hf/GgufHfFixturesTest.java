package io.graphlane.inference.hf;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.backend.cpu.nn.CpuTensor;
import io.graphlane.checkpoint.gguf.GgmlType;
import io.graphlane.checkpoint.gguf.HfGguf;
import io.graphlane.inference.generate.SequentialGenerator;
import io.graphlane.inference.generate.SequentialRequest;
import io.graphlane.inference.generate.StagedModel;
import io.graphlane.inference.llama.Segment;
import io.graphlane.inference.model.CpuModels;
import io.graphlane.inference.model.ModelDirectory;
import io.graphlane.inference.sampling.SamplingParams;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * HF fixtures of other families written as F32 GGUF (qwen2's biases, qwen3's q/k head norms, llama's permuted q/k
 * biases, phi3's fused qkv and gate_up matrices with LongRoPE factors as tensors, phi4-mini's partial rotary dimension)
 * run from the file within the fixture's tolerance of its float64 reference, with its 8 greedy tokens, on 2 stages;
 * gemma2 (norm weights stored as {@code 1 + w}) runs as the fixture does from safetensors at llama.cpp's query scale.
 */
class GgufHfFixturesTest {
    @TempDir
    static Path tmp;

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"qwen2", "qwen3", "attention-bias", "phi3-longrope", "phi4-mini"})
    void f32FileMatchesTheReference(String name) {
        HfFixturesTest.Reference ref = HfFixturesTest.reference(name);
        Path file = HfGguf.write(ref.dir(), GgmlType.F32, tmp.resolve(name).resolve(name + ".gguf"));
        ModelDirectory opened = ModelDirectory.open(file);
        // as HfFixturesTest opens them: transformers generates past max_position_embeddings (the longrope cases do)
        ModelDirectory dir = opened.config().maxPositions() >= ref.positions() ? opened : opened.withMaxPositions(ref.positions());
        try (StagedModel<CpuTensor> model = CpuModels.staged(dir, 2)) {
            long id = 1;
            for (HfFixturesTest.Prompt p : ref.prompts()) {
                float[] last = model.step(List.of(new Segment(id, 0, p.ids().length)), p.ids())[0];
                model.endRequest(id++);
                double error = HfFixturesTest.relativeError(p.lastLogits(), last);
                assertTrue(error <= ref.toleranceRel(), name + ", " + p.ids().length + "-token prompt: last logits off by " + error);
                int[] greedy = SequentialGenerator.generate(model, List.of(new SequentialRequest(p.ids(), 8, SamplingParams.GREEDY))).get(0);
                assertArrayEquals(p.greedy8(), greedy, name + ", " + p.ids().length + "-token prompt: greedy tokens");
            }
        }
    }

    /**
     * gemma2 written as llama.cpp's converter writes it (every norm weight stored as {@code 1 + w}) runs from the file as
     * the same fixture runs from safetensors with {@code query_pre_attn_scalar} set to its head dimension: llama.cpp's
     * gemma2 has no key for that scalar and scales queries by {@code 1/sqrt(head_dim)} (by {@code 1/sqrt(hidden/heads)}
     * for the 46-layer model, as every released Gemma 2 agrees), while this fixture's scalar is 24 against a head
     * dimension of 16, so no GGUF file can meet its float64 reference; the safetensors run is checked against that
     * reference by GemmaFixtureTest. Left at {@code 1 + w}, the norms would scale every layer's input by about 2.
     */
    @Test
    void gemma2FileRunsAsTheFixtureAtLlamaCppsQueryScale() throws IOException {
        HfFixturesTest.Reference ref = HfFixturesTest.reference("gemma2");
        Path file = HfGguf.write(ref.dir(), GgmlType.F32, tmp.resolve("gemma2").resolve("gemma2.gguf"));
        Path same = Files.createDirectories(tmp.resolve("gemma2-head-dim-scale"));
        ObjectMapper json = new ObjectMapper();
        ObjectNode config = (ObjectNode) json.readTree(ref.dir().resolve("config.json").toFile());
        assertEquals(16, config.get("head_dim").asInt());
        config.put("query_pre_attn_scalar", config.get("head_dim").asInt());
        json.writeValue(same.resolve("config.json").toFile(), config);
        Files.copy(ref.dir().resolve("model.safetensors"), same.resolve("model.safetensors"));
        Files.copy(ref.dir().resolve("tokenizer.json"), same.resolve("tokenizer.json"));
        try (StagedModel<CpuTensor> fromGguf = CpuModels.staged(ModelDirectory.open(file), 2);
             StagedModel<CpuTensor> fromHf = CpuModels.staged(ModelDirectory.open(same), 1)) {
            long id = 1;
            for (HfFixturesTest.Prompt p : ref.prompts()) {
                float[] want = fromHf.step(List.of(new Segment(id, 0, p.ids().length)), p.ids())[0];
                float[] found = fromGguf.step(List.of(new Segment(id, 0, p.ids().length)), p.ids())[0];
                fromHf.endRequest(id);
                fromGguf.endRequest(id++);
                double error = HfFixturesTest.relativeError(want, found);
                assertTrue(error <= 1e-5, p.ids().length + "-token prompt: last logits off by " + error);
                int[] a = SequentialGenerator.generate(fromHf, List.of(new SequentialRequest(p.ids(), 8, SamplingParams.GREEDY))).get(0);
                int[] b = SequentialGenerator.generate(fromGguf, List.of(new SequentialRequest(p.ids(), 8, SamplingParams.GREEDY))).get(0);
                assertArrayEquals(a, b, p.ids().length + "-token prompt: greedy tokens");
            }
        }
    }
}
