package io.graphlane.inference.weights;

import static org.junit.jupiter.api.Assertions.assertEquals;
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
import io.graphlane.checkpoint.CheckpointSource;
import io.graphlane.core.GraphlaneException;
import io.graphlane.core.tensor.DType;
import io.graphlane.core.tensor.Shape;
import io.graphlane.core.tensor.TensorSpec;
import io.graphlane.inference.generate.StagedModel;
import io.graphlane.inference.llama.LlamaConfig;
import io.graphlane.inference.llama.LlamaStage;
import io.graphlane.inference.llama.LlamaTensors;
import io.graphlane.inference.llama.Segment;
import io.graphlane.inference.llama.StageWeights;
import io.graphlane.inference.model.ModelDirectory;
import io.graphlane.inference.stage.StagePlan;
import io.graphlane.inference.stage.StageSpec;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.typed.ActorRef;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A mixture-of-experts stage through the materialization supervisor (the Mixtral fixture): each expert is an atomic
 * unit of its own; a bad expert fails the stage naming the layer and the expert, with every unit bound before it closed
 * and no lease left open.
 */
class MoeSupervisedLoadTest {
    private static final ActorTestKit KIT = ActorTestKit.create();
    private static final Path MIXTRAL = Path.of("src/test/resources/hf-fixtures/mixtral");

    private CpuBackend device;
    private ActorRef<MaterializationSupervisor.Command<CpuParameter>> supervisor;
    private final List<CpuParameter> slots = new CopyOnWriteArrayList<>();

    @AfterAll
    static void shutdown() {
        KIT.shutdownTestKit();
    }

    @BeforeEach
    void start() {
        device = new CpuBackend("cpu-moe-weights-test");
        CpuExecutor loadingLane = device.forkExecutors(device.rootExecutor(), 1).get(0);
        supervisor = KIT.spawn(MaterializationSupervisor.create(new CpuParameterBackend(device), loadingLane,
                MaterializationSettings.fromConfig(KIT.system().settings().config())));
    }

    @AfterEach
    void stop() {
        supervisor.tell(new MaterializationSupervisor.Stop<>());
        device.close();
    }

    private SupervisedWeightsLoader<CpuParameter, CpuTensor> loader(CheckpointSource source, LlamaConfig config) {
        return new SupervisedWeightsLoader<>(supervisor, KIT.system().scheduler(), source, config, Duration.ofSeconds(30),
                new CpuWeightSlots(e -> {
                    CpuParameter p = new CpuParameter(e.name(), new TensorSpec(DType.F32, Shape.of(e.checkpointShape())));
                    slots.add(p);
                    return p;
                }));
    }

    @Test
    void everyExpertBindsAsItsOwnUnitAndTheModelMatchesTheReference() {
        ModelDirectory model = ModelDirectory.open(MIXTRAL);
        var ref = io.graphlane.inference.hf.HfFixturesTest.reference("mixtral");
        try (CheckpointSource source = model.openSource(4);
             SupervisedWeightsLoader<CpuParameter, CpuTensor> loader = loader(source, model.config())) {
            StageSpec stage = StagePlan.balanced(model.config().layerCount(), 1).stage(0);
            StageWeights<CpuTensor> weights = loader.load(stage);
            assertEquals(LlamaTensors.forStage(model.config(), stage).size(), loader.parameters(weights).size());
            assertEquals(0, source.openLeaseCount());
            assertEquals(8, weights.layers().get(1).moe().expertCount());
            try (StagedModel<CpuTensor> staged = new StagedModel<>(List.of(new LlamaStage<>(model.config(), weights, new CpuNeuralOps())))) {
                var p = ref.prompts().get(1);
                float[] last = staged.step(List.of(new Segment(1, 0, p.ids().length)), p.ids())[0];
                double worst = 0;
                double largest = 0;
                for (int i = 0; i < last.length; i++) {
                    worst = Math.max(worst, Math.abs(last[i] - p.lastLogits()[i]));
                    largest = Math.max(largest, Math.abs(p.lastLogits()[i]));
                }
                assertTrue(worst / largest <= ref.toleranceRel(), "last logits off by " + worst / largest);
            }
        }
        assertTrue(slots.stream().noneMatch(CpuParameter::isBound), "closing the loader closes every expert's weights");
    }

    @Test
    void aBadExpertFailsTheStageNamingItWithNothingBound(@TempDir Path dir) {
        LlamaConfig config = ModelDirectory.open(MIXTRAL).config();
        String misshapen = config.moe().downName(1, 5);
        Path broken = CorruptCheckpoints.transposed(MIXTRAL, dir, misshapen);
        try (CheckpointSource source = CheckpointSource.open(broken);
             SupervisedWeightsLoader<CpuParameter, CpuTensor> loader = loader(source, config)) {
            GraphlaneException e = assertThrows(GraphlaneException.class,
                    () -> loader.load(StagePlan.balanced(config.layerCount(), 1).stage(0)));
            assertTrue(e.getMessage().contains("layer 1 expert 5") && e.getMessage().contains(misshapen), e.getMessage());
            assertTrue(e.getMessage().contains("nothing of it is bound"), e.getMessage());
            assertEquals(0, source.openLeaseCount(), "leases open: " + source.openLeases());
            assertTrue(slots.stream().noneMatch(CpuParameter::isBound), "the units bound before the bad expert are closed");
            assertTrue(slots.size() > 3, "units before the bad one were handed to the supervisor: " + slots.size());
            assertEquals(0, loader.heldStageCount());
        }
    }
}
