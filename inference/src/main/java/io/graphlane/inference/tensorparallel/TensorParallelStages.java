package io.graphlane.inference.tensorparallel;

import io.graphlane.actors.materialize.MaterializationSupervisor;
import io.graphlane.backend.cpu.nn.CpuNeuralOps;
import io.graphlane.backend.cpu.nn.CpuTensor;
import io.graphlane.backend.cpu.param.CpuParameter;
import io.graphlane.checkpoint.CheckpointSource;
import io.graphlane.core.GraphlaneException;
import io.graphlane.inference.model.ModelDirectory;
import io.graphlane.inference.stage.StagePlan;
import io.graphlane.inference.stage.StageSpec;
import io.graphlane.inference.weights.CpuLoadingSupervisor;
import io.graphlane.inference.weights.CpuWeightSlots;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Scheduler;

/** Builds the tensor-parallel stages of a model for CPU lanes in this JVM, their shards loaded through a materialization supervisor. */
public final class TensorParallelStages {
    /** How long a shard may take to load when the caller gives no timeout. */
    public static final Duration DEFAULT_LOAD_TIMEOUT = CpuLoadingSupervisor.DEFAULT_LOAD_TIMEOUT;

    private TensorParallelStages() {
    }

    /**
     * Every stage of {@code plan} split over {@code degree} shards, each shard one atomic unit of {@code supervisor}
     * (waited for at most {@code timeout}) reading only its selection of the checkpoint; the stages' works run on
     * whichever lanes their caller gives them (one per rank), and each stage's {@link TensorParallelStage#close}
     * releases its shards' weights through their loader, exactly once. All or nothing: on failure what was loaded
     * is released.
     *
     * @throws GraphlaneException if {@code degree} does not divide the heads, kv heads or intermediate width (naming
     *         the field, the tensors it splits and both numbers), or if a shard fails to load (naming it and the tensor)
     */
    public static List<TensorParallelStage<CpuTensor>> load(ActorRef<MaterializationSupervisor.Command<CpuParameter>> supervisor,
                                                            Scheduler scheduler, Duration timeout, ModelDirectory model,
                                                            StagePlan plan, int degree, Consumer<StageSpec> progress) {
        TensorParallelism tp = new TensorParallelism(model.config(), degree);
        List<TensorParallelStage<CpuTensor>> stages = new ArrayList<>();
        // A shard's leases are all taken at once, so every checkpoint shard may be pinned together.
        int maxOpen = Math.max(CheckpointSource.DEFAULT_MAX_OPEN_SHARDS, model.checkpoint().catalog().shards().size());
        SupervisedShardLoader<CpuParameter, CpuTensor> loader = null;
        try (CheckpointSource source = model.openSource(maxOpen)) {
            loader = new SupervisedShardLoader<>(supervisor, scheduler, source, tp, timeout, new CpuWeightSlots());
            for (StageSpec spec : plan.stages()) {
                List<LlamaShard<CpuTensor>> shards = new ArrayList<>();
                for (int r = 0; r < degree; r++) {
                    shards.add(new LlamaShard<>(tp, loader.load(spec, r), new CpuNeuralOps()));
                }
                stages.add(new TensorParallelStage<>(shards, loader::release));
                progress.accept(spec);
            }
            return stages;
        } catch (RuntimeException e) {
            stages.forEach(TensorParallelStage::close);
            if (loader != null) {
                loader.close(); // the shards of a stage not yet made
            }
            throw e;
        }
    }

    /**
     * As {@link #load(ActorRef, Scheduler, Duration, ModelDirectory, StagePlan, int, Consumer)}, for a caller with no
     * actor system (the logits command, tests): a {@link CpuLoadingSupervisor} is started for the load and stopped once
     * it is done; the weights stay bound until the stages are closed.
     */
    public static List<TensorParallelStage<CpuTensor>> load(ModelDirectory model, StagePlan plan, int degree,
                                                            Consumer<StageSpec> progress) {
        new TensorParallelism(model.config(), degree); // refuses a bad degree before anything starts
        return CpuLoadingSupervisor.run("graphlane-tensor-parallel-load",
                (supervisor, scheduler) -> load(supervisor, scheduler, DEFAULT_LOAD_TIMEOUT, model, plan, degree, progress));
    }
}
