package io.graphlane.inference.model;

import static io.graphlane.core.nn.NeuralOps.NO_WINDOW;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.graphlane.backend.cpu.nn.CpuTensor;
import io.graphlane.backend.gpu.CudaLibraries;
import io.graphlane.backend.gpu.CudaLibrary;
import io.graphlane.inference.api.GenerationRequest;
import io.graphlane.inference.api.GenerationResult;
import io.graphlane.inference.generate.SequentialGenerator;
import io.graphlane.inference.generate.SequentialRequest;
import io.graphlane.inference.generate.StagedModel;
import io.graphlane.inference.gpu.GpuInference;
import io.graphlane.inference.hf.HfFixturesTest;
import io.graphlane.inference.hf.HfFixturesTest.Prompt;
import io.graphlane.inference.llama.Segment;
import io.graphlane.inference.pipeline.InferencePipeline;
import io.graphlane.inference.sampling.SamplingParams;
import io.graphlane.inference.stage.StagePlan;
import io.graphlane.inference.tensorparallel.TensorParallelStage;
import io.graphlane.inference.tensorparallel.TensorParallelStages;
import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The {@code mistral-sliding-window} fixture (hf-fixtures: sliding_window 16 on both layers, prompts of 3 to 60 tokens
 * whose greedy steps cross the window) against its float64 reference written apart from the engine: last-position
 * logits within {@code tolerance_rel × max |logit|} and the 8 greedy tokens (decoded with the KV cache), through whole
 * stages (1 and 2), tensor-parallel shards (2, over 1 and 2 stages), the pipeline, and the pipeline on a CUDA device
 * where there is one.
 */
class SlidingWindowFixtureTest {
    private static final String CASE = "mistral-sliding-window";
    private static final ActorTestKit TESTKIT = ActorTestKit.create();

    @AfterAll
    static void shutdown() {
        TESTKIT.shutdownTestKit();
    }

    @Test
    void everyLayerSlidesAndTheSequenceMayGrowToMaxPositionEmbeddings() {
        ModelDirectory model = ModelDirectory.open(dir());
        assertEquals(List.of(16, 16), model.config().attentionWindows());
        assertEquals(256, model.config().maxPositions());
        assertTrue(prompts().stream().anyMatch(p -> p.ids().length > 16), "a prompt longer than the window");
    }

    @ParameterizedTest(name = "{0} stage(s)")
    @ValueSource(ints = {1, 2})
    void wholeStagesGiveTheReferenceLogitsAndGreedyTokens(int stages) {
        ModelDirectory model = ModelDirectory.open(dir());
        List<Prompt> prompts = prompts();
        try (StagedModel<CpuTensor> staged = CpuModels.staged(model, stages)) {
            for (int i = 0; i < prompts.size(); i++) {
                Prompt p = prompts.get(i);
                float[] logits = staged.step(List.of(new Segment(100 + i, 0, p.ids().length)), p.ids())[0];
                staged.endRequest(100 + i);
                assertWithinTolerance(p, logits, stages + " stage(s)");
            }
            for (Prompt p : prompts) {
                int[] tokens = SequentialGenerator.generate(staged, List.of(new SequentialRequest(p.ids(), 8, SamplingParams.GREEDY))).get(0);
                assertArrayEquals(p.greedy8(), tokens, stages + " stage(s), prompt of " + p.ids().length);
            }
        }
    }

    @ParameterizedTest(name = "T=2, {0} stage(s)")
    @ValueSource(ints = {1, 2})
    void tensorParallelShardsGiveTheReferenceLogits(int stageCount) {
        ModelDirectory model = ModelDirectory.open(dir());
        List<TensorParallelStage<CpuTensor>> stages = TensorParallelStages.load(model,
                StagePlan.balanced(model.config().layerCount(), stageCount), 2, s -> { });
        try {
            List<Prompt> prompts = prompts();
            for (int i = 0; i < prompts.size(); i++) {
                Prompt p = prompts.get(i);
                float[] logits = StagedModel.step(stages, List.of(new Segment(200 + i, 0, p.ids().length)), p.ids())[0];
                int request = 200 + i;
                stages.forEach(s -> s.endRequest(request));
                assertWithinTolerance(p, logits, "T=2, " + stageCount + " stage(s)");
            }
        } finally {
            stages.forEach(TensorParallelStage::close);
        }
    }

    @ParameterizedTest(name = "T={0}, {1} stage(s)")
    @CsvSource({"1,1", "1,2", "2,1", "2,2"})
    void thePipelineGivesTheReferenceGreedyTokens(int degree, int stageCount) throws Exception {
        try (InferencePipeline model = InferencePipeline.builder().model(dir()).stages(stageCount).tensorParallel(degree)
                .actorSystem(TESTKIT.system()).build()) {
            List<Prompt> prompts = prompts();
            List<GenerationRequest> requests = new ArrayList<>();
            for (Prompt p : prompts) {
                requests.add(GenerationRequest.greedy(Arrays.stream(p.ids()).boxed().toList(), 8));
            }
            List<GenerationResult> results = model.generateAll(requests, Duration.ofSeconds(60));
            for (int i = 0; i < prompts.size(); i++) {
                assertEquals(Arrays.stream(prompts.get(i).greedy8()).boxed().toList(), results.get(i).generatedIds(),
                        "T=" + degree + ", " + stageCount + " stage(s), prompt of " + prompts.get(i).ids().length);
            }
        }
    }

    /**
     * The pipeline on a CUDA device (the GPU attention kernel with the window): the reference greedy tokens at 1 and 2
     * stages. Skipped, with the reason, where the CUDA driver, NVRTC or cuBLAS is missing.
     */
    @ParameterizedTest(name = "GPU, {0} stage(s)")
    @ValueSource(ints = {1, 2})
    void thePipelineOnTheGpuGivesTheReferenceGreedyTokens(int stageCount) throws Exception {
        for (CudaLibrary library : new CudaLibrary[] {CudaLibrary.DRIVER, CudaLibrary.NVRTC, CudaLibrary.CUBLAS}) {
            assumeTrue(CudaLibraries.isAvailable(library), () -> "the fixture on the GPU needs " + library.sharedObject() + ": "
                    + CudaLibraries.unavailableReason(library).orElse(""));
        }
        try (InferencePipeline model = InferencePipeline.builder().model(dir()).stages(stageCount)
                .backend(GpuInference.device(Integer.getInteger("graphlane.gpu.test-device", 0))).actorSystem(TESTKIT.system()).build()) {
            assertTrue(model.backendDescription().startsWith("cuda"), model.backendDescription());
            List<Prompt> prompts = prompts();
            List<GenerationRequest> requests = new ArrayList<>();
            for (Prompt p : prompts) {
                requests.add(GenerationRequest.greedy(Arrays.stream(p.ids()).boxed().toList(), 8));
            }
            List<GenerationResult> results = model.generateAll(requests, Duration.ofSeconds(120));
            for (int i = 0; i < prompts.size(); i++) {
                assertEquals(Arrays.stream(prompts.get(i).greedy8()).boxed().toList(), results.get(i).generatedIds(),
                        "GPU, " + stageCount + " stage(s), prompt of " + prompts.get(i).ids().length);
            }
        }
    }

    /** Without the window the same weights miss the reference: the check above depends on the window being applied. */
    @Test
    void fullAttentionMissesTheReferencePastTheWindow(@TempDir Path tmp) throws IOException {
        try (Stream<Path> files = Files.list(dir())) {
            for (Path f : files.toList()) {
                Files.copy(f, tmp.resolve(f.getFileName()));
            }
        }
        Path config = tmp.resolve("config.json");
        String text = Files.readString(config);
        assertTrue(text.contains("\"sliding_window\": 16"), text);
        Files.writeString(config, text.replace("\"sliding_window\": 16", "\"sliding_window\": null"));
        ModelDirectory full = ModelDirectory.open(tmp);
        assertEquals(List.of(NO_WINDOW, NO_WINDOW), full.config().attentionWindows());
        Prompt longest = prompts().stream().max((a, b) -> a.ids().length - b.ids().length).orElseThrow();
        try (StagedModel<CpuTensor> staged = CpuModels.staged(full, 1)) {
            float[] logits = staged.step(List.of(new Segment(1, 0, longest.ids().length)), longest.ids())[0];
            double allowed = tolerance() * maxAbs(longest.lastLogits());
            double diff = Fixture.maxAbsDifference(longest.lastLogits(), logits);
            assertTrue(diff > 100 * allowed, "full attention over " + longest.ids().length + " positions differs by only " + diff);
        }
    }

    private static void assertWithinTolerance(Prompt p, float[] logits, String where) {
        double allowed = tolerance() * maxAbs(p.lastLogits());
        double diff = Fixture.maxAbsDifference(p.lastLogits(), logits);
        assertTrue(diff <= allowed, where + ", prompt of " + p.ids().length + ": max |diff| " + diff + " > " + allowed);
    }

    private static double maxAbs(float[] values) {
        double most = 0;
        for (float v : values) {
            most = Math.max(most, Math.abs(v));
        }
        return most;
    }

    private static Path dir() {
        try {
            return Path.of(SlidingWindowFixtureTest.class.getResource("/hf-fixtures/" + CASE + "/config.json").toURI()).getParent();
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }

    private static double tolerance() {
        return HfFixturesTest.reference(CASE).toleranceRel();
    }

    private static List<Prompt> prompts() {
        return HfFixturesTest.reference(CASE).prompts();
    }
}
