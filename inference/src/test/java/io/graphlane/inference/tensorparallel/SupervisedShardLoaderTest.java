package io.graphlane.inference.tensorparallel;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.actors.materialize.MaterializationSettings;
import io.graphlane.actors.materialize.MaterializationSupervisor;
import io.graphlane.backend.cpu.CpuBackend;
import io.graphlane.backend.cpu.CpuExecutor;
import io.graphlane.backend.cpu.nn.CpuNeuralOps;
import io.graphlane.backend.cpu.nn.CpuTensor;
import io.graphlane.backend.cpu.param.CpuMaterialization;
import io.graphlane.backend.cpu.param.CpuParameter;
import io.graphlane.backend.cpu.param.CpuParameterBackend;
import io.graphlane.backend.cpu.param.CpuWeight;
import io.graphlane.checkpoint.CheckpointSource;
import io.graphlane.core.GraphlaneException;
import io.graphlane.core.backend.ParameterBackend;
import io.graphlane.core.completion.Completion;
import io.graphlane.core.param.EncodedLease;
import io.graphlane.core.param.WeightRecipe;
import io.graphlane.core.tensor.DType;
import io.graphlane.core.tensor.Shape;
import io.graphlane.core.tensor.TensorSpec;
import io.graphlane.inference.generate.StagedModel;
import io.graphlane.inference.llama.LlamaConfig;
import io.graphlane.inference.llama.LlamaTensors.Expected;
import io.graphlane.inference.llama.Segment;
import io.graphlane.inference.model.Fixture;
import io.graphlane.inference.model.ModelDirectory;
import io.graphlane.inference.stage.StagePlan;
import io.graphlane.inference.stage.StageSpec;
import io.graphlane.inference.weights.CpuWeightSlots;
import io.graphlane.testkit.ledger.RetentionLedger;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Tensor-parallel shards through the materialization supervisor, on the tiny-llama fixture: one atomic unit per
 * shard holding exactly its selection, every lease (the sliced sources of the recipes and the whole tensors) released
 * exactly once and only after its realization's completion, the reference logits, every weight closed once by the
 * loader, and a selection that cannot be made refused naming the tensor and the numbers, with nothing left bound or
 * leased.
 */
class SupervisedShardLoaderTest {
    private static final ActorTestKit KIT = ActorTestKit.create();
    private static final Duration TIMEOUT = Duration.ofSeconds(60);

    private CpuBackend device;
    private LeaseLedger ledger;
    private ActorRef<MaterializationSupervisor.Command<CpuParameter>> supervisor;
    /** The units the supervisor was handed, by name, with their request counts. */
    private final List<String> units = new CopyOnWriteArrayList<>();
    private final List<Integer> unitSizes = new CopyOnWriteArrayList<>();

    @AfterAll
    static void shutdown() {
        KIT.shutdownTestKit();
    }

    @BeforeEach
    void start() {
        device = new CpuBackend("cpu-shard-weights-test");
        CpuExecutor loadingLane = device.forkExecutors(device.rootExecutor(), 1).get(0);
        ledger = new LeaseLedger(new CpuParameterBackend(device));
        ActorRef<MaterializationSupervisor.Command<CpuParameter>> real = KIT.spawn(MaterializationSupervisor.create(ledger, loadingLane,
                MaterializationSettings.fromConfig(KIT.system().settings().config())));
        supervisor = KIT.spawn(watching(real));
    }

    @AfterEach
    void stop() {
        supervisor.tell(new MaterializationSupervisor.Stop<>());
        device.close();
    }

    /** Forwards every command to {@code real}, noting each unit it is handed. */
    private Behavior<MaterializationSupervisor.Command<CpuParameter>> watching(ActorRef<MaterializationSupervisor.Command<CpuParameter>> real) {
        return Behaviors.receiveMessage(command -> {
            if (command instanceof MaterializationSupervisor.MaterializeUnit<CpuParameter> unit) {
                units.add(unit.unit());
                unitSizes.add(unit.requests().size());
            }
            real.tell(command);
            return Behaviors.same();
        });
    }

    @ParameterizedTest(name = "layout ''{0}'', T={1}, {2} stage(s)")
    @CsvSource({"'',2,1", "'',2,2", "'',1,2", "bf16,2,2", "sharded,2,1"})
    void eachShardIsOneUnitOfItsSelectionAndGivesTheReferenceLogits(String layout, int degree, int stageCount) {
        ModelDirectory model = ModelDirectory.open(Fixture.dir(layout));
        TensorParallelism tp = new TensorParallelism(model.config(), degree);
        List<CpuParameter> slots = new CopyOnWriteArrayList<>();
        List<TensorParallelStage<CpuTensor>> stages = new ArrayList<>();
        SupervisedShardLoader<CpuParameter, CpuTensor> loader;
        try (CheckpointSource source = model.openSource(8)) {
            loader = new SupervisedShardLoader<>(supervisor, KIT.system().scheduler(), source, tp, TIMEOUT, new CpuWeightSlots());
            for (StageSpec spec : StagePlan.balanced(model.config().layerCount(), stageCount).stages()) {
                List<LlamaShard<CpuTensor>> shards = new ArrayList<>();
                for (int r = 0; r < degree; r++) {
                    int unitsBefore = units.size();
                    ShardWeights<CpuTensor> weights = loader.load(spec, r);
                    assertEquals(unitsBefore + 1, units.size(), "one unit for shard " + r + " of " + spec);
                    List<SupervisedShardLoader.ShardTensor> selection = SupervisedShardLoader.selection(tp, spec, r);
                    assertEquals(selection.size(), unitSizes.get(unitsBefore), "the unit holds the shard's selection");
                    assertTrue(units.get(unitsBefore).endsWith(spec + " shard " + r + "/" + degree), units.get(unitsBefore));
                    assertEquals(0, source.openLeaseCount(), "leases open after shard " + r + " of " + spec + ": " + source.openLeases());
                    List<CpuParameter> parameters = loader.parameters(weights);
                    for (int i = 0; i < selection.size(); i++) {
                        CpuParameter p = parameters.get(i);
                        assertTrue(p.isBound(), p.name());
                        // each part holds only the rank's rows or columns
                        assertEquals(f32(selection.get(i).part()), p.weight().spec(), p.name());
                    }
                    slots.addAll(parameters);
                    shards.add(new LlamaShard<>(tp, weights, new CpuNeuralOps()));
                }
                stages.add(new TensorParallelStage<>(shards, loader::release));
            }
        }
        assertEquals(degree * stageCount, loader.heldShardCount());
        assertTrue(ledger.leases() > 0, "the shards were read through leases the ledger saw");
        assertEquals(List.of(), ledger.faults(), "every lease released exactly once, after its realization's completion");
        boolean bf16 = layout.equals("bf16");
        for (Fixture.Prompt p : Fixture.prompts()) {
            float[] logits = lastLogits(stages, p.ids());
            assertArrayEquals(bf16 ? p.lastLogitsBf16() : p.lastLogitsF32(), logits, bf16 ? 2e-3f : 1e-4f,
                    "last logits of a " + p.ids().length + "-token prompt, layout '" + layout + "', T=" + degree);
        }
        stages.forEach(TensorParallelStage::close);
        assertEquals(0, loader.heldShardCount(), "each stage's close released its shards through the loader");
        assertTrue(slots.stream().noneMatch(CpuParameter::isBound), "every weight closed");
        ShardWeights<CpuTensor> released = stages.get(0).shards().get(0).weights();
        assertThrows(IllegalStateException.class, () -> loader.release(released), "a second release is refused, not repeated");
        loader.close();
    }

    @Test
    void closingTheLoaderReleasesEveryShardStillHeldOnce() {
        ModelDirectory model = ModelDirectory.open(Fixture.dir(""));
        TensorParallelism tp = new TensorParallelism(model.config(), 2);
        StageSpec whole = StagePlan.balanced(model.config().layerCount(), 1).stage(0);
        List<CpuParameter> slots = new ArrayList<>();
        try (CheckpointSource source = model.openSource(8);
             SupervisedShardLoader<CpuParameter, CpuTensor> loader = new SupervisedShardLoader<>(supervisor, KIT.system().scheduler(),
                     source, tp, TIMEOUT, new CpuWeightSlots())) {
            slots.addAll(loader.parameters(loader.load(whole, 0)));
            slots.addAll(loader.parameters(loader.load(whole, 1)));
            assertEquals(2, loader.heldShardCount());
            loader.close();
            assertEquals(0, loader.heldShardCount());
            assertTrue(slots.stream().noneMatch(CpuParameter::isBound), "every weight of both shards closed");
            assertThrows(IllegalStateException.class, () -> loader.load(whole, 0), "a closed loader loads nothing");
        }
        assertEquals(List.of(), ledger.faults());
    }

    @Test
    void aDegreeThatSplitsNoWholeHeadsIsRefusedNamingTheTensorAndTheNumbers() {
        ModelDirectory model = ModelDirectory.open(Fixture.dir(""));
        GraphlaneException e = assertThrows(GraphlaneException.class,
                () -> TensorParallelStages.load(supervisor, KIT.system().scheduler(), TIMEOUT, model,
                        StagePlan.balanced(model.config().layerCount(), 1), 3, s -> { }));
        String m = e.getMessage();
        assertTrue(m.contains("--tensor-parallel 3 does not divide num_attention_heads = 4"), m);
        assertTrue(m.contains("self_attn.q_proj.weight"), m);
        assertTrue(units.isEmpty(), "nothing was handed to the supervisor: " + units);
    }

    @Test
    void aSelectionTheCheckpointCannotGiveBindsNothingAndNamesTheTensorAndTheShapes() {
        // A model whose intermediate width the checkpoint's tensors do not have: rank 0's rows of gate_proj would not
        // be the rows the checkpoint holds.
        ModelDirectory model = ModelDirectory.open(Fixture.dir(""));
        LlamaConfig c = model.config();
        LlamaConfig wider = new LlamaConfig(c.hiddenSize(), 176, c.layerCount(), c.headCount(), c.kvHeadCount(), c.headDim(),
                c.vocabSize(), c.rmsNormEps(), c.ropeTheta(), c.tieWordEmbeddings(), c.qkvBias(), c.outputBias(), c.maxPositions());
        TensorParallelism tp = new TensorParallelism(wider, 2);
        try (CheckpointSource source = model.openSource(8);
             SupervisedShardLoader<CpuParameter, CpuTensor> loader = new SupervisedShardLoader<>(supervisor, KIT.system().scheduler(),
                     source, tp, TIMEOUT, new CpuWeightSlots())) {
            StageSpec whole = StagePlan.balanced(wider.layerCount(), 1).stage(0);
            GraphlaneException e = assertThrows(GraphlaneException.class, () -> loader.load(whole, 0));
            String m = e.getMessage();
            assertTrue(m.contains("shard 0/2 of " + whole), m);
            assertTrue(m.contains("model.layers.0.mlp.gate_proj.weight") && m.contains("[172, 64]") && m.contains("[176, 64]"), m);
            assertEquals(0, source.openLeaseCount(), "no lease left open: " + source.openLeases());
            assertEquals(0, loader.heldShardCount());
            assertTrue(units.isEmpty(), "a selection refused before the unit reaches the supervisor: " + units);
        }
        assertEquals(List.of(), ledger.faults());
    }

    private static float[] lastLogits(List<TensorParallelStage<CpuTensor>> stages, int[] ids) {
        float[] logits = StagedModel.step(stages, List.of(new Segment(1, 0, ids.length)), ids)[0];
        for (TensorParallelStage<CpuTensor> stage : stages) {
            stage.endRequest(1);
        }
        return logits;
    }

    /** The F32 spec of a selection's part. */
    private static TensorSpec f32(Expected e) {
        return new TensorSpec(DType.F32, Shape.of(e.checkpointShape()));
    }

    /**
     * The CPU parameter backend with every lease it is handed or a recipe acquires recorded in a {@link RetentionLedger},
     * held until the completion of the realization that owns it: the ledger proves each was released exactly once and
     * never before that completion ended.
     */
    private static final class LeaseLedger implements ParameterBackend<CpuExecutor, CpuParameter, CpuWeight, CpuMaterialization> {
        private final CpuParameterBackend delegate;
        private final RetentionLedger ledger = new RetentionLedger();
        private final List<String> unowned = new CopyOnWriteArrayList<>();

        LeaseLedger(CpuParameterBackend delegate) {
            this.delegate = delegate;
        }

        int leases() {
            return ledger.entries().size();
        }

        /** What went wrong: a lease released twice, before its completion, never, or before a realization owned it. */
        List<String> faults() {
            List<String> all = new ArrayList<>(unowned);
            all.addAll(ledger.violations());
            for (RetentionLedger.Entry e : ledger.entries()) {
                if (e.releaseCount() != 1) {
                    all.add(e.name() + " released " + e.releaseCount() + " times");
                }
            }
            return all;
        }

        @Override
        public CpuMaterialization materialize(EncodedLease lease, CpuExecutor context) {
            Watched w = new Watched(lease);
            CpuMaterialization m = delegate.materialize(w, context);
            w.ownedBy(m.completion());
            return m;
        }

        @Override
        public CpuMaterialization materializeRecipe(WeightRecipe recipe, CpuExecutor context) {
            List<Watched> acquired = new ArrayList<>();
            CpuMaterialization m = delegate.materializeRecipe(new WeightRecipe() {
                @Override
                public String name() {
                    return recipe.name();
                }

                @Override
                public TensorSpec output() {
                    return recipe.output();
                }

                @Override
                public List<EncodedLease> acquireSources() {
                    List<EncodedLease> sources = new ArrayList<>();
                    for (EncodedLease l : recipe.acquireSources()) {
                        Watched w = new Watched(l);
                        acquired.add(w);
                        sources.add(w);
                    }
                    return sources;
                }

                @Override
                public void evaluate(List<EncodedLease> sources, ByteBuffer out) {
                    recipe.evaluate(sources, out);
                }
            }, context);
            acquired.forEach(w -> w.ownedBy(m.completion()));
            return m;
        }

        @Override
        public CpuWeight finishMaterialization(CpuMaterialization materialization) throws InterruptedException {
            return delegate.finishMaterialization(materialization);
        }

        @Override
        public CpuWeight shareMaterializedWeight(CpuWeight weight) {
            return delegate.shareMaterializedWeight(weight);
        }

        @Override
        public void validateBind(CpuParameter parameter, CpuWeight weight) {
            delegate.validateBind(parameter, weight);
        }

        @Override
        public void bind(CpuParameter parameter, CpuWeight weight) {
            delegate.bind(parameter, weight);
        }

        @Override
        public void unbind(CpuParameter parameter, CpuWeight weight) {
            delegate.unbind(parameter, weight);
        }

        /** A lease whose releases are recorded in the ledger; the first one releases the checkpoint's lease. */
        private final class Watched implements EncodedLease {
            private final EncodedLease lease;
            private final RetentionLedger.Entry entry;

            Watched(EncodedLease lease) {
                this.lease = lease;
                this.entry = ledger.acquire(lease.name(), lease::release);
            }

            void ownedBy(Completion completion) {
                entry.heldUntil(completion);
            }

            @Override
            public String name() {
                return lease.name();
            }

            @Override
            public TensorSpec spec() {
                return lease.spec();
            }

            @Override
            public ByteBuffer bytes() {
                return lease.bytes();
            }

            @Override
            public boolean isReleased() {
                return lease.isReleased();
            }

            @Override
            public void release() {
                if (entry.completions().isEmpty()) {
                    unowned.add(name() + " released before a realization owned it");
                }
                entry.close();
            }
        }
    }
}
