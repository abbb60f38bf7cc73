package io.graphlane.inference.weights;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.actors.materialize.MaterializationSettings;
import io.graphlane.actors.materialize.MaterializationSupervisor;
import io.graphlane.backend.cpu.CpuBackend;
import io.graphlane.backend.cpu.CpuExecutor;
import io.graphlane.backend.cpu.nn.CpuNeuralOps;
import io.graphlane.backend.cpu.nn.CpuTensor;
import io.graphlane.backend.cpu.param.CpuParameter;
import io.graphlane.backend.cpu.param.CpuParameterBackend;
import io.graphlane.backend.cpu.param.CpuWeight;
import io.graphlane.checkpoint.CheckpointSource;
import io.graphlane.core.GraphlaneException;
import io.graphlane.core.tensor.DType;
import io.graphlane.core.tensor.Shape;
import io.graphlane.core.tensor.TensorSpec;
import io.graphlane.inference.generate.SequentialGenerator;
import io.graphlane.inference.generate.SequentialRequest;
import io.graphlane.inference.generate.StagedModel;
import io.graphlane.inference.llama.LlamaConfig;
import io.graphlane.inference.llama.LlamaStage;
import io.graphlane.inference.llama.LlamaTensors;
import io.graphlane.inference.llama.Segment;
import io.graphlane.inference.llama.StageWeights;
import io.graphlane.inference.model.Fixture;
import io.graphlane.inference.model.ModelDirectory;
import io.graphlane.inference.sampling.SamplingParams;
import io.graphlane.inference.stage.StagePlan;
import io.graphlane.inference.stage.StageSpec;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Stage weights through the materialization supervisor, on the tiny-llama fixture: the reference
 * logits and greedy tokens in every layout, one atomic unit per stage (a bad tensor binds nothing
 * and leaves no lease open), F32 used in place, and each weight closed exactly once on release.
 */
class SupervisedWeightsLoaderTest {
    private static final ActorTestKit KIT = ActorTestKit.create();
    private static final Duration TIMEOUT = Duration.ofSeconds(30);

    private CpuBackend device;
    private CpuExecutor loadingLane;
    private ActorRef<MaterializationSupervisor.Command<CpuParameter>> supervisor;
    private final List<CpuParameter> slots = new CopyOnWriteArrayList<>();

    @AfterAll
    static void shutdown() {
        KIT.shutdownTestKit();
    }

    @BeforeEach
    void start() {
        device = new CpuBackend("cpu-weights-test");
        loadingLane = device.forkExecutors(device.rootExecutor(), 1).get(0);
        supervisor = KIT.spawn(MaterializationSupervisor.create(new CpuParameterBackend(device), loadingLane,
                MaterializationSettings.fromConfig(KIT.system().settings().config())));
    }

    @AfterEach
    void stop() {
        supervisor.tell(new MaterializationSupervisor.Stop<>());
        device.close();
    }

    /** A loader whose parameter slots the test can inspect. */
    private SupervisedWeightsLoader<CpuParameter, CpuTensor> loader(CheckpointSource source, LlamaConfig config, Duration timeout) {
        return new SupervisedWeightsLoader<>(supervisor, KIT.system().scheduler(), source, config, timeout, new CpuWeightSlots(e -> {
            CpuParameter p = new CpuParameter(e.name(), new TensorSpec(DType.F32, Shape.of(e.checkpointShape())));
            slots.add(p);
            return p;
        }));
    }

    @ParameterizedTest(name = "layout ''{0}'', {1} stage(s)")
    @CsvSource({"'',1", "'',3", "sharded,2", "bf16,1", "bf16,4"})
    void everyLayoutGivesTheReferenceLogitsAndGreedyTokens(String layout, int stageCount) {
        boolean bf16 = layout.equals("bf16");
        ModelDirectory model = ModelDirectory.open(Fixture.dir(layout));
        try (CheckpointSource source = model.openSource(CheckpointSource.DEFAULT_MAX_OPEN_SHARDS);
             SupervisedWeightsLoader<CpuParameter, CpuTensor> loader = loader(source, model.config(), TIMEOUT)) {
            List<LlamaStage<CpuTensor>> stages = new ArrayList<>();
            for (StageSpec spec : StagePlan.balanced(model.config().layerCount(), stageCount).stages()) {
                StageWeights<CpuTensor> weights = loader.load(spec);
                assertEquals(0, source.openLeaseCount(), "leases open after " + spec + ": " + source.openLeases());
                List<CpuParameter> parameters = loader.parameters(weights);
                assertEquals(LlamaTensors.forStage(model.config(), spec).size(), parameters.size());
                for (CpuParameter p : parameters) {
                    // F32 checkpoint bytes are read in place; BF16 is widened into storage of its own.
                    assertEquals(!bf16, p.weight().isZeroCopy(), p.name() + " in layout '" + layout + "'");
                }
                stages.add(new LlamaStage<>(model.config(), weights, new CpuNeuralOps()));
            }
            try (StagedModel<CpuTensor> staged = new StagedModel<>(stages)) {
                long id = 1;
                for (Fixture.Prompt prompt : Fixture.prompts()) {
                    float[] last = staged.step(List.of(new Segment(id, 0, prompt.ids().length)), prompt.ids())[0];
                    staged.endRequest(id++);
                    assertClose(bf16 ? prompt.lastLogitsBf16() : prompt.lastLogitsF32(), last, bf16 ? 2e-3f : 1e-4f,
                            "last logits of a " + prompt.ids().length + "-token prompt, layout '" + layout + "'");
                    if (!bf16) {
                        int[] greedy = SequentialGenerator.generate(staged,
                                List.of(new SequentialRequest(prompt.ids(), 16, SamplingParams.GREEDY))).get(0);
                        assertArrayEquals(prompt.greedy16(), greedy, "greedy tokens, layout '" + layout + "'");
                    }
                }
            }
            assertEquals(stageCount, loader.heldStageCount());
        }
        assertTrue(slots.stream().noneMatch(CpuParameter::isBound), "closing the loader releases every stage it held");
    }

    @Test
    void releasingAStageClosesEachOfItsWeightsOnceAndOnlyThatStage() {
        ModelDirectory model = ModelDirectory.open(Fixture.dir(""));
        try (CheckpointSource source = model.openSource(4);
             SupervisedWeightsLoader<CpuParameter, CpuTensor> loader = loader(source, model.config(), TIMEOUT)) {
            List<StageSpec> plan = StagePlan.balanced(4, 2).stages();
            StageWeights<CpuTensor> first = loader.load(plan.get(0));
            StageWeights<CpuTensor> second = loader.load(plan.get(1));
            List<CpuWeight> firstWeights = loader.parameters(first).stream().map(CpuParameter::weight).toList();
            List<CpuWeight> secondWeights = loader.parameters(second).stream().map(CpuParameter::weight).toList();

            loader.release(first);
            assertTrue(firstWeights.stream().allMatch(w -> w.isClosed() && w.storage().isFreed()), "stage 0's weights closed");
            assertTrue(secondWeights.stream().noneMatch(CpuWeight::isClosed), "stage 1's weights untouched");
            IllegalStateException twice = assertThrows(IllegalStateException.class, () -> loader.release(first));
            assertTrue(twice.getMessage().contains("stage 0/2"), twice.getMessage());
            assertEquals(1, loader.heldStageCount());

            loader.close();
            assertTrue(secondWeights.stream().allMatch(w -> w.isClosed() && w.storage().isFreed()), "close releases what is left");
            loader.close(); // idempotent: nothing is closed twice (a second close of a CpuWeight would throw)
            assertThrows(IllegalStateException.class, () -> loader.load(plan.get(0)));
        }
    }

    @Test
    void aMissingTensorFailsTheStageNamingItAndLeasesNothing(@TempDir Path dir) {
        String missing = LlamaTensors.layer(1, "self_attn.k_proj.weight");
        Path broken = CorruptCheckpoints.without(Fixture.dir(""), dir, missing);
        LlamaConfig config = ModelDirectory.open(Fixture.dir("")).config();
        try (CheckpointSource source = CheckpointSource.open(broken);
             SupervisedWeightsLoader<CpuParameter, CpuTensor> loader = loader(source, config, TIMEOUT)) {
            GraphlaneException e = assertThrows(GraphlaneException.class, () -> loader.load(StagePlan.balanced(4, 2).stage(0)));
            assertTrue(e.getMessage().contains("has no tensor " + missing + " (expected shape [32, 64])"), e.getMessage());
            assertEquals(0, source.openLeaseCount());
            assertTrue(slots.isEmpty(), "nothing was handed to the supervisor");
            assertEquals(0, loader.heldStageCount());
            // The other stage does not read that tensor and still loads.
            loader.load(StagePlan.balanced(4, 2).stage(1));
            assertEquals(0, source.openLeaseCount());
        }
    }

    @Test
    void aWrongShapeFailsTheWholeStageInTheSupervisorBindingNothingAndReleasingEveryLease(@TempDir Path dir) {
        String misshapen = LlamaTensors.layer(2, "mlp.up_proj.weight");
        Path broken = CorruptCheckpoints.transposed(Fixture.dir(""), dir, misshapen);
        LlamaConfig config = ModelDirectory.open(Fixture.dir("")).config();
        try (CheckpointSource source = CheckpointSource.open(broken);
             SupervisedWeightsLoader<CpuParameter, CpuTensor> loader = loader(source, config, TIMEOUT)) {
            StageSpec stage = StagePlan.balanced(4, 2).stage(1);
            GraphlaneException e = assertThrows(GraphlaneException.class, () -> loader.load(stage));
            assertTrue(e.getMessage().contains(misshapen + " (VALIDATION)") && e.getMessage().contains("shape: expected [172, 64], found [64, 172]")
                    && e.getMessage().contains("1 problem(s)"), e.getMessage());
            assertTrue(e.getMessage().contains("nothing of it is bound"), e.getMessage());
            assertEquals(1, e.getSuppressed().length, "the supervisor's cause is attached");
            assertEquals(0, source.openLeaseCount(), "leases open after a failed unit: " + source.openLeases());
            assertEquals(LlamaTensors.forStage(config, stage).size(), slots.size());
            assertTrue(slots.stream().noneMatch(CpuParameter::isBound), "a failed unit binds none of its parameters");
            assertEquals(0, loader.heldStageCount());
        }
    }

    @Test
    void aLoadingLaneThatRefusesWorkFailsTheStageWithNothingBoundAndNoLeaseOpen() throws Exception {
        ModelDirectory model = ModelDirectory.open(Fixture.dir(""));
        device.shutdownExecutor(loadingLane).await();
        try (CheckpointSource source = model.openSource(4);
             SupervisedWeightsLoader<CpuParameter, CpuTensor> loader = loader(source, model.config(), TIMEOUT)) {
            GraphlaneException e = assertThrows(GraphlaneException.class, () -> loader.load(StagePlan.balanced(4, 1).stage(0)));
            assertTrue(e.getMessage().contains(LlamaTensors.EMBEDDING + " (START)"), e.getMessage());
            assertEquals(0, source.openLeaseCount(), "leases open after a refused unit: " + source.openLeases());
            assertTrue(slots.stream().noneMatch(CpuParameter::isBound));
        }
    }

    @Test
    void aStageNotAnsweredInTimeFailsWhileItsLeasesStayHeldAndItsLateWeightsAreClosed() throws Exception {
        // One unit at a time, so the next unit's answer proves the late one was bound and answered before it.
        supervisor.tell(new MaterializationSupervisor.Stop<>());
        supervisor = KIT.spawn(MaterializationSupervisor.create(new CpuParameterBackend(device), loadingLane,
                new MaterializationSettings(1, 4)));
        ModelDirectory model = ModelDirectory.open(Fixture.dir(""));
        CountDownLatch gate = new CountDownLatch(1);
        device.submit(loadingLane, () -> gate.await(30, TimeUnit.SECONDS)); // every realization queues behind it
        List<StageSpec> plan = StagePlan.balanced(4, 2).stages();
        try (CheckpointSource source = model.openSource(4);
             SupervisedWeightsLoader<CpuParameter, CpuTensor> impatient = loader(source, model.config(), Duration.ofMillis(300));
             SupervisedWeightsLoader<CpuParameter, CpuTensor> patient = loader(source, model.config(), TIMEOUT)) {
            GraphlaneException e = assertThrows(GraphlaneException.class, () -> impatient.load(plan.get(0)));
            assertTrue(e.getMessage().contains("was not loaded within PT0.3S"), e.getMessage());
            int lateLeases = LlamaTensors.forStage(model.config(), plan.get(0)).size();
            assertEquals(lateLeases, source.openLeaseCount(), "no lease is released before its realization ran");
            List<CpuParameter> lateSlots = List.copyOf(slots);

            gate.countDown();
            patient.load(plan.get(1));
            TestProbe<Object> probe = KIT.createTestProbe();
            probe.awaitAssert(Duration.ofSeconds(10), () -> {
                assertTrue(lateSlots.stream().noneMatch(CpuParameter::isBound), "the late answer's weights are closed");
                return null;
            });
            assertEquals(0, source.openLeaseCount());
            assertEquals(0, impatient.heldStageCount());
            assertEquals(1, patient.heldStageCount());
        }
    }

    private static void assertClose(float[] expected, float[] found, float tolerance, String what) {
        assertEquals(expected.length, found.length, what + ": vocabulary size");
        for (int i = 0; i < expected.length; i++) {
            float error = Math.abs(expected[i] - found[i]);
            assertTrue(error <= tolerance, what + ": token " + i + " is off by " + error + ", tolerance " + tolerance);
        }
    }
}
