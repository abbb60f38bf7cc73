package io.graphlane.inference.weights;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.actors.materialize.MaterializationSettings;
import io.graphlane.actors.materialize.MaterializationSupervisor;
import io.graphlane.backend.cpu.CpuBackend;
import io.graphlane.backend.cpu.CpuExecutor;
import io.graphlane.backend.cpu.nn.CpuNeuralOps;
import io.graphlane.backend.cpu.nn.CpuTensor;
import io.graphlane.backend.cpu.nn.PackedMatrix;
import io.graphlane.backend.cpu.param.CpuParameter;
import io.graphlane.backend.cpu.param.CpuParameterBackend;
import io.graphlane.checkpoint.CheckpointSource;
import io.graphlane.core.GraphlaneException;
import io.graphlane.core.tensor.DType;
import io.graphlane.inference.api.GenerationRequest;
import io.graphlane.inference.api.GenerationResult;
import io.graphlane.inference.generate.SequentialRequest;
import io.graphlane.inference.generate.StagedModel;
import io.graphlane.inference.llama.LayerWeights;
import io.graphlane.inference.llama.LlamaStage;
import io.graphlane.inference.llama.LlamaTensors;
import io.graphlane.inference.llama.Segment;
import io.graphlane.inference.llama.StageWeights;
import io.graphlane.inference.model.CpuModels;
import io.graphlane.inference.model.Fixture;
import io.graphlane.inference.model.ModelDirectory;
import io.graphlane.inference.pipeline.InferencePipeline;
import io.graphlane.inference.stage.StagePlan;
import io.graphlane.inference.stage.StageSpec;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.IntStream;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.typed.ActorRef;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Weights held narrower than F32 ({@link WeightFormat}) on the tiny-llama fixture: BF16 checkpoint matrices
 * stay BF16 (the mapped bytes used in place through the supervisor) and give PyTorch's BF16 logits; 8-bit
 * blocks stay within a measured error of the F32 logits and keep every greedy token whose margin is larger.
 */
class WeightFormatTest {
    private static final ActorTestKit KIT = ActorTestKit.create();
    private static final float BF16_TOLERANCE = 2e-3f;
    /**
     * Bound on |q8 logit - F32 logit| on the fixture: measured 0.101 at worst over the 80 steps of the 5 reference
     * prompts (logits span about ±4), so 1.5 times that.
     */
    private static final float Q8_TOLERANCE = 0.15f;

    @AfterAll
    static void shutdown() {
        KIT.shutdownTestKit();
    }

    @ParameterizedTest(name = "{0} stage(s)")
    @ValueSource(ints = {1, 4})
    void bf16MatricesStayBf16AndGiveTheBf16ReferenceLogits(int stages) {
        try (StagedModel<CpuTensor> model = CpuModels.staged(ModelDirectory.open(Fixture.dir("bf16")), stages, WeightFormat.STORED)) {
            LayerWeights<CpuTensor> layer = model.stages().get(0).weights().layers().get(0);
            assertEquals(PackedMatrix.Encoding.BF16, layer.wq().packed().encoding());
            assertEquals(PackedMatrix.Encoding.BF16, layer.wDown().packed().encoding());
            assertNull(layer.attentionNorm().packed(), "norms are widened to F32");
            long id = 1;
            for (Fixture.Prompt prompt : Fixture.prompts()) {
                float[] last = model.step(List.of(new Segment(id, 0, prompt.ids().length)), prompt.ids())[0];
                model.endRequest(id++);
                float error = Fixture.maxAbsDifference(prompt.lastLogitsBf16(), last);
                assertTrue(error <= BF16_TOLERANCE, "bf16 logits of a " + prompt.ids().length + "-token prompt are off by " + error);
            }
        }
    }

    /**
     * The checkpoint's own 16-bit dtype is kept only where the SIMD kernels run; without them a default load widens to
     * F32 (OpenBLAS), since the scalar 16-bit kernel would make decoding slower than before. F32 stays F32 either way.
     */
    @Test
    void storedSixteenBitMatricesStaySixteenBitOnlyWithTheSimdKernels() {
        assertEquals(DType.BF16, WeightPlan.storedNarrow(DType.BF16, true));
        assertEquals(DType.F16, WeightPlan.storedNarrow(DType.F16, true));
        assertEquals(DType.F32, WeightPlan.storedNarrow(DType.BF16, false));
        assertEquals(DType.F32, WeightPlan.storedNarrow(DType.F16, false));
    }

    @Test
    void q8LogitsStayWithinTheBoundAndKeepEveryGreedyTokenWithALargerMargin() {
        ModelDirectory dir = ModelDirectory.open(Fixture.dir(""));
        float worst = 0;
        int checked = 0;
        try (StagedModel<CpuTensor> f32 = CpuModels.staged(dir, 1, WeightFormat.F32);
             StagedModel<CpuTensor> q8 = CpuModels.staged(dir, 1, WeightFormat.Q8)) {
            LayerWeights<CpuTensor> layer = q8.stages().get(0).weights().layers().get(0);
            assertEquals(PackedMatrix.Encoding.Q8_0, layer.wq().packed().encoding());
            assertEquals(PackedMatrix.Encoding.Q8_0, layer.wGate().packed().encoding());
            assertNull(layer.wDown().packed(), "down_proj has 172 columns, not a multiple of 32: it stays F32");
            PackedMatrix head = q8.stages().get(0).weights().lmHead().packed();
            if (PackedMatrix.simdKernels()) {
                assertEquals(PackedMatrix.Encoding.BF16, head.encoding(), "the F32 head is held in 16 bits, not wider");
            } else {
                assertNull(head, "without the SIMD kernels 16-bit matrices are widened to F32");
            }
            long id = 1;
            for (Fixture.Prompt prompt : Fixture.prompts()) {
                // teacher-forced along the reference greedy path: each step's logits from the same prefix
                for (int t = 0; t < prompt.greedy16().length; t++) {
                    int[] prefix = IntStream.concat(Arrays.stream(prompt.ids()), Arrays.stream(prompt.greedy16(), 0, t)).toArray();
                    float[] reference = f32.step(List.of(new Segment(id, 0, prefix.length)), prefix)[0];
                    f32.endRequest(id);
                    float[] quantized = q8.step(List.of(new Segment(id, 0, prefix.length)), prefix)[0];
                    q8.endRequest(id++);
                    assertEquals(prompt.greedy16()[t], Fixture.argmax(reference), "the F32 model follows the reference path");
                    float error = Fixture.maxAbsDifference(reference, quantized);
                    worst = Math.max(worst, error);
                    assertTrue(error <= Q8_TOLERANCE, "q8 logits at step " + t + " are off by " + error);
                    if (Fixture.margin(reference) > 2 * Q8_TOLERANCE) {
                        assertEquals(prompt.greedy16()[t], Fixture.argmax(quantized), "greedy token " + t + " with margin "
                                + Fixture.margin(reference));
                        checked++;
                    }
                }
            }
        }
        System.out.printf("q8 on the fixture: max |logit - F32 logit| = %.5f over every step; %d greedy tokens checked%n", worst, checked);
        assertTrue(checked > 0, "some steps have a margin above the bound");
    }

    @Test
    void throughTheSupervisorBf16MatricesAreTheMappedBytesAndQ8IsADerivedWeight() {
        CpuBackend device = new CpuBackend("cpu-weight-format-test");
        CpuExecutor lane = device.forkExecutors(device.rootExecutor(), 1).get(0);
        ActorRef<MaterializationSupervisor.Command<CpuParameter>> supervisor = KIT.spawn(MaterializationSupervisor.create(
                CpuParameterBackend.keepingHalfPrecision(device), lane, MaterializationSettings.fromConfig(KIT.system().settings().config())));
        try {
            ModelDirectory bf16 = ModelDirectory.open(Fixture.dir("bf16"));
            try (CheckpointSource source = bf16.openSource(CheckpointSource.DEFAULT_MAX_OPEN_SHARDS);
                 SupervisedWeightsLoader<CpuParameter, CpuTensor> loader = new SupervisedWeightsLoader<>(supervisor,
                         KIT.system().scheduler(), source, bf16.config(), Duration.ofSeconds(30), new CpuWeightSlots(), WeightFormat.STORED)) {
                StageSpec whole = StagePlan.balanced(bf16.config().layerCount(), 1).stages().get(0);
                StageWeights<CpuTensor> weights = loader.load(whole);
                assertEquals(0, source.openLeaseCount(), "leases open after the load: " + source.openLeases());
                for (CpuParameter p : loader.parameters(weights)) {
                    boolean vector = p.spec().shape().rank() == 1;
                    assertEquals(vector ? DType.F32 : DType.BF16, p.weight().spec().dtype(), p.name());
                    assertEquals(!vector, p.weight().isZeroCopy(), p.name() + ": matrices are read in place, vectors widened");
                }
                try (StagedModel<CpuTensor> staged = new StagedModel<>(List.of(new LlamaStage<>(bf16.config(), weights, new CpuNeuralOps())))) {
                    Fixture.Prompt prompt = Fixture.prompts().get(0);
                    float[] last = staged.step(List.of(new Segment(1, 0, prompt.ids().length)), prompt.ids())[0];
                    assertTrue(Fixture.maxAbsDifference(prompt.lastLogitsBf16(), last) <= BF16_TOLERANCE);
                }
                loader.release(weights);
            }
            ModelDirectory f32 = ModelDirectory.open(Fixture.dir(""));
            try (CheckpointSource source = f32.openSource(CheckpointSource.DEFAULT_MAX_OPEN_SHARDS);
                 SupervisedWeightsLoader<CpuParameter, CpuTensor> loader = new SupervisedWeightsLoader<>(supervisor,
                         KIT.system().scheduler(), source, f32.config(), Duration.ofSeconds(30), new CpuWeightSlots(), WeightFormat.Q8)) {
                StageWeights<CpuTensor> weights = loader.load(StagePlan.balanced(f32.config().layerCount(), 2).stages().get(1));
                assertEquals(0, source.openLeaseCount(), "the recipes' leases were released after their materializations");
                List<CpuParameter> parameters = loader.parameters(weights);
                CpuParameter q = parameters.stream().filter(p -> p.name().equals(LlamaTensors.layer(2, "self_attn.q_proj.weight")))
                        .findFirst().orElseThrow();
                assertEquals(DType.I8, q.weight().spec().dtype());
                assertEquals(72, q.weight().spec().shape().dim(1), "64 int8 quants and 2 F32 scales per row");
                assertNotNull(weights.layers().get(0).wq().packed());
                loader.release(weights);
                assertTrue(parameters.stream().noneMatch(CpuParameter::isBound), "release closes every weight");
            }
        } finally {
            supervisor.tell(new MaterializationSupervisor.Stop<>());
            device.close();
        }
    }

    @ParameterizedTest(name = "--weights {0}")
    @ValueSource(strings = {"bf16", "q8"})
    void thePipelineHoldsTheFormatItIsGivenAndGeneratesWhatTheStagedModelDoes(String option) throws Exception {
        WeightFormat format = WeightFormat.parse("--weights", option);
        List<Fixture.Prompt> prompts = Fixture.prompts();
        List<int[]> expected = new ArrayList<>();
        try (StagedModel<CpuTensor> staged = CpuModels.staged(ModelDirectory.open(Fixture.dir("")), 1, format)) {
            for (Fixture.Prompt p : prompts) {
                expected.add(io.graphlane.inference.generate.SequentialGenerator.generate(staged, List.of(
                        new SequentialRequest(p.ids(), 12,
                                io.graphlane.inference.sampling.SamplingParams.GREEDY))).get(0));
            }
        }
        try (InferencePipeline pipeline = InferencePipeline.builder().model(Fixture.dir("")).stages(2).weights(format)
                .actorSystem(KIT.system()).build()) {
            List<GenerationRequest> requests = new ArrayList<>();
            for (Fixture.Prompt p : prompts) {
                requests.add(GenerationRequest.greedy(Arrays.stream(p.ids()).boxed().toList(), 12));
            }
            List<GenerationResult> results = pipeline.generateAll(requests, Duration.ofSeconds(60));
            for (int i = 0; i < prompts.size(); i++) {
                assertArrayEquals(expected.get(i), results.get(i).generatedIds().stream().mapToInt(Integer::intValue).toArray(),
                        "prompt " + i + " with --weights " + option);
            }
        }
    }

    @Test
    void anUnknownFormatIsRefusedNamingTheOptionAndTheChoices() {
        GraphlaneException e = assertThrows(GraphlaneException.class, () -> WeightFormat.parse("--weights", "int4"));
        assertEquals("--weights: 'int4' is not a weight format; use one of stored, f32, bf16, q8", e.getMessage());
    }

    @Test
    void aNarrowFormatIsRefusedOnABackendThatHoldsF32Only() {
        GraphlaneException e = assertThrows(GraphlaneException.class, () -> WeightPlan.requireHoldable(WeightFormat.Q8, false));
        assertTrue(e.getMessage().startsWith("--weights q8 is not supported on this backend"), e.getMessage());
        WeightPlan.requireHoldable(WeightFormat.STORED, false);
    }
}
