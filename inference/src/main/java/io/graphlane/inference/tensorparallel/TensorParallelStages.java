package io.graphlane.inference.tensorparallel;

import io.graphlane.backend.cpu.CpuBackend;
import io.graphlane.backend.cpu.CpuExecutor;
import io.graphlane.backend.cpu.collective.CollectiveSettings;
import io.graphlane.backend.cpu.collective.CpuCollectiveGroup;
import io.graphlane.backend.cpu.nn.CpuNeuralOps;
import io.graphlane.backend.cpu.nn.CpuTensor;
import io.graphlane.checkpoint.CheckpointSource;
import io.graphlane.inference.model.ModelDirectory;
import io.graphlane.inference.stage.StagePlan;
import io.graphlane.inference.stage.StageSpec;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/** Builds the tensor-parallel stages of a model on CPU lanes. */
public final class TensorParallelStages {
    private TensorParallelStages() {
    }

    /**
     * Every stage of {@code plan} split over {@code degree} shard lanes forked from {@code backend},
     * each stage with its own collective group; each rank reads only its shard of the checkpoint.
     * All or nothing: on failure what was loaded is released.
     *
     * @throws io.graphlane.core.GraphlaneException if {@code degree} does not divide the heads, kv heads or intermediate width
     */
    public static List<TensorParallelStage> load(ModelDirectory model, StagePlan plan, int degree, CpuBackend backend,
                                                 CollectiveSettings settings, Consumer<StageSpec> progress) {
        TensorParallelism tp = new TensorParallelism(model.config(), degree);
        List<TensorParallelStage> stages = new ArrayList<>();
        List<ShardWeights<CpuTensor>> loose = new ArrayList<>();
        CpuNeuralOps loaderOps = new CpuNeuralOps();
        try (CheckpointSource source = model.openSource(CheckpointSource.DEFAULT_MAX_OPEN_SHARDS)) {
            ShardedWeightsLoader<CpuTensor> loader = new ShardedWeightsLoader<>(source, tp, loaderOps, loaderOps::fromBuffer);
            for (StageSpec spec : plan.stages()) {
                List<CpuExecutor> lanes = backend.forkExecutors(backend.rootExecutor(), degree);
                CpuCollectiveGroup group = CpuCollectiveGroup.inProcess("tp-stage-" + spec.index(), lanes, settings);
                List<LlamaShard<CpuTensor>> shards = new ArrayList<>();
                for (int r = 0; r < degree; r++) {
                    ShardWeights<CpuTensor> weights = loader.load(spec, r);
                    loose.add(weights);
                    shards.add(new LlamaShard<>(tp, weights, new CpuNeuralOps(), new CpuShardComm(group.member(r))));
                }
                stages.add(new TensorParallelStage(backend, lanes, shards));
                loose.clear();
                progress.accept(spec);
            }
            return stages;
        } catch (RuntimeException e) {
            loose.forEach(w -> ShardedWeightsLoader.release(w, loaderOps));
            stages.forEach(TensorParallelStage::close);
            throw e;
        }
    }
}
