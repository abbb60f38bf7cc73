package io.graphlane.inference.model;

import static io.graphlane.core.nn.NeuralOps.NO_WINDOW;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.graphlane.backend.cpu.nn.CpuTensor;
import io.graphlane.core.GraphlaneException;
import io.graphlane.backend.gpu.CudaLibraries;
import io.graphlane.backend.gpu.CudaLibrary;
import io.graphlane.inference.api.GenerationRequest;
import io.graphlane.inference.api.GenerationResult;
import io.graphlane.inference.generate.StagedModel;
import io.graphlane.inference.gpu.GpuInference;
import io.graphlane.inference.hf.HfFixturesTest;
import io.graphlane.inference.hf.HfFixturesTest.Prompt;
import io.graphlane.inference.pipeline.InferencePipeline;
import io.graphlane.inference.llama.LlamaConfig;
import io.graphlane.inference.llama.Segment;
import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.UnaryOperator;
import java.util.stream.Stream;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * What is particular to the Gemma fixtures (hf-fixtures {@code gemma2}, {@code gemma3-text} and
 * {@code gemma3-text-params-v5}: (1 + w) norms, embeddings × sqrt(hidden), GeGLU, four norms per layer,
 * query_pre_attn_scalar, soft-capping, sliding layers 0 and 2 with window 16, Gemma 3's q/k norms and local/global RoPE
 * in both config layouts): their configs read as transformers reads them, and for each Gemma feature that leaving it
 * out misses the float64 reference, so {@code HfFixturesTest}'s checks of these cases (logits and greedy tokens on 1 and
 * 2 stages, the pipeline, tensor parallel 2) depend on it being applied; and the Gemma configs graphlane refuses.
 */
class GemmaFixtureTest {
    private static final ActorTestKit TESTKIT = ActorTestKit.create();

    @AfterAll
    static void shutdown() {
        TESTKIT.shutdownTestKit();
    }

    /**
     * The pipeline on a CUDA device (the GPU kernels' (1 + w) norms, scale, soft caps and scaled attention): the reference
     * greedy tokens of every Gemma fixture on 2 stages. Skipped, with the reason, where the CUDA driver, NVRTC or cuBLAS
     * is missing.
     */
    @ParameterizedTest(name = "GPU, {0}")
    @ValueSource(strings = {"gemma2", "gemma3-text", "gemma3-text-params-v5"})
    void thePipelineOnTheGpuGivesTheReferenceGreedyTokens(String name) throws Exception {
        for (CudaLibrary library : new CudaLibrary[] {CudaLibrary.DRIVER, CudaLibrary.NVRTC, CudaLibrary.CUBLAS}) {
            assumeTrue(CudaLibraries.isAvailable(library), () -> "the fixture on the GPU needs " + library.sharedObject() + ": "
                    + CudaLibraries.unavailableReason(library).orElse(""));
        }
        try (InferencePipeline model = InferencePipeline.builder().model(dir(name)).stages(2)
                .backend(GpuInference.device(Integer.getInteger("graphlane.gpu.test-device", 0))).actorSystem(TESTKIT.system()).build()) {
            assertTrue(model.backendDescription().startsWith("cuda"), model.backendDescription());
            List<Prompt> prompts = prompts(name);
            List<GenerationRequest> requests = new ArrayList<>();
            for (Prompt p : prompts) {
                requests.add(GenerationRequest.greedy(Arrays.stream(p.ids()).boxed().toList(), 8));
            }
            List<GenerationResult> results = model.generateAll(requests, Duration.ofSeconds(120));
            for (int i = 0; i < prompts.size(); i++) {
                assertEquals(Arrays.stream(prompts.get(i).greedy8()).boxed().toList(), results.get(i).generatedIds(),
                        name + " on the GPU, prompt of " + prompts.get(i).ids().length);
            }
        }
    }
    @Test
    void theConfigsReadAsTransformersReadsThem() {
        LlamaConfig g2 = ModelDirectory.open(dir("gemma2")).config();
        assertEquals(List.of(16, NO_WINDOW, 16, NO_WINDOW), g2.attentionWindows());
        assertEquals(8f, g2.embeddingScale());
        assertEquals(1f, g2.normWeightOffset());
        assertEquals((float) (1 / Math.sqrt(24)), g2.attentionScale());
        assertEquals(5f, g2.attentionSoftcap());
        assertEquals(15f, g2.finalSoftcap());
        assertTrue(g2.tieWordEmbeddings());
        for (String name : List.of("gemma3-text", "gemma3-text-params-v5")) {
            LlamaConfig g3 = ModelDirectory.open(dir(name)).config();
            assertEquals(List.of(16, NO_WINDOW, 16, NO_WINDOW), g3.attentionWindows(), name);
            assertEquals(0f, g3.attentionSoftcap(), name);
            assertEquals(0f, g3.finalSoftcap(), name);
            assertTrue(g3.qkNorm(), name);
            assertEquals(10_000.0, g3.rope(0).theta(), name);
            assertEquals("default", g3.rope(0).type().hfName(), name);
            assertEquals(1_000_000.0, g3.rope(1).theta(), name);
            assertEquals("linear", g3.rope(1).type().hfName(), name);
            assertEquals(8.0, g3.rope(1).factor(), name);
        }
    }

    /** Each Gemma feature, changed in config.json, moves the longest prompt's logits far past the tolerance. */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"no attention soft-capping", "no final soft-capping", "head_dim scaling", "no sliding window",
            "global rope on sliding layers", "no linear scaling on global layers"})
    void leavingOutAFeatureMissesTheReference(String mistake, @TempDir Path tmp) throws IOException {
        String name = mistake.contains("rope") || mistake.contains("linear") ? "gemma3-text" : "gemma2";
        UnaryOperator<String> edit = switch (mistake) {
            case "no attention soft-capping" -> t -> replace(t, "\"attn_logit_softcapping\": 5.0", "\"attn_logit_softcapping\": null");
            case "no final soft-capping" -> t -> replace(t, "\"final_logit_softcapping\": 15.0", "\"final_logit_softcapping\": null");
            case "head_dim scaling" -> t -> replace(t, "\"query_pre_attn_scalar\": 24", "\"query_pre_attn_scalar\": 16");
            case "no sliding window" -> t -> replace(t, "\"sliding_window\": 16", "\"sliding_window\": 1000");
            case "global rope on sliding layers" -> t -> replace(t, "\"rope_local_base_freq\": 10000.0", "\"rope_local_base_freq\": 1000000.0");
            case "no linear scaling on global layers" -> t -> replace(t, "\"factor\": 8.0", "\"factor\": 1.0");
            default -> throw new IllegalArgumentException(mistake);
        };
        Path copy = copyWithConfig(name, tmp, edit);
        Prompt longest = prompts(name).stream().max((a, b) -> a.ids().length - b.ids().length).orElseThrow();
        try (StagedModel<CpuTensor> staged = CpuModels.staged(ModelDirectory.open(copy), 1)) {
            float[] logits = staged.step(List.of(new Segment(1, 0, longest.ids().length)), longest.ids())[0];
            double allowed = tolerance(name) * maxAbs(longest.lastLogits());
            double diff = Fixture.maxAbsDifference(longest.lastLogits(), logits);
            assertTrue(diff > 10 * allowed, mistake + ": differs by only " + diff + " (tolerance " + allowed + ")");
        }
    }

    @Test
    void aBidirectionalGemmaAndAVisionLanguageConfigAreRefusedNamingTheField(@TempDir Path tmp) throws IOException {
        Path bidirectional = copyWithConfig("gemma3-text", tmp.resolve("a"), t -> replace(t,
                "\"use_bidirectional_attention\": false", "\"use_bidirectional_attention\": true"));
        GraphlaneException e = assertThrows(GraphlaneException.class, () -> ModelDirectory.open(bidirectional));
        assertTrue(e.getMessage().contains("'use_bidirectional_attention'"), e.getMessage());
        Path vision = copyWithConfig("gemma3-text", tmp.resolve("b"), t -> replace(t,
                "\"Gemma3ForCausalLM\"", "\"Gemma3ForConditionalGeneration\""));
        e = assertThrows(GraphlaneException.class, () -> ModelDirectory.open(vision));
        assertTrue(e.getMessage().contains("Gemma3ForConditionalGeneration") && e.getMessage().contains("vision-language"), e.getMessage());
        Path llamaWithCap = copyWithConfig("gemma2", tmp.resolve("c"), t -> replace(replace(t, "\"Gemma2ForCausalLM\"",
                "\"LlamaForCausalLM\""), "\"model_type\": \"gemma2\"", "\"model_type\": \"llama\""));
        e = assertThrows(GraphlaneException.class, () -> ModelDirectory.open(llamaWithCap));
        assertTrue(e.getMessage().contains("field '"), e.getMessage());
    }

    private static String replace(String text, String from, String to) {
        assertTrue(text.contains(from), "config.json holds " + from);
        return text.replace(from, to);
    }

    private static Path copyWithConfig(String name, Path target, UnaryOperator<String> edit) throws IOException {
        Files.createDirectories(target);
        try (Stream<Path> files = Files.list(dir(name))) {
            for (Path f : files.toList()) {
                Files.copy(f, target.resolve(f.getFileName()));
            }
        }
        Path config = target.resolve("config.json");
        Files.writeString(config, edit.apply(Files.readString(config)));
        return target;
    }

    private static double maxAbs(float[] values) {
        double most = 0;
        for (float v : values) {
            most = Math.max(most, Math.abs(v));
        }
        return most;
    }

    static Path dir(String name) {
        try {
            return Path.of(GemmaFixtureTest.class.getResource("/hf-fixtures/" + name + "/config.json").toURI()).getParent();
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }

    private static double tolerance(String name) {
        return HfFixturesTest.reference(name).toleranceRel();
    }

    static List<Prompt> prompts(String name) {
        return HfFixturesTest.reference(name).prompts();
    }
}
