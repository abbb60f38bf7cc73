package io.graphlane.inference.tensorparallel;

import io.graphlane.backend.cpu.nn.CpuNeuralOps;
import io.graphlane.backend.cpu.nn.CpuTensor;
import io.graphlane.checkpoint.CheckpointSource;
import io.graphlane.inference.model.ModelDirectory;
import io.graphlane.inference.stage.StagePlan;
import io.graphlane.inference.stage.StageSpec;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/** Builds the tensor-parallel stages of a model for CPU lanes in this JVM. */
public final class TensorParallelStages {
    private TensorParallelStages() {
    }

    /**
     * Every stage of {@code plan} split over {@code degree} shards, each rank reading only its shard of the
     * checkpoint; the stages' works run on whichever lanes their caller gives them (one per rank). All or nothing:
     * on failure what was loaded is released.
     *
     * @throws io.graphlane.core.GraphlaneException if {@code degree} does not divide the heads, kv heads or intermediate width
     */
    public static List<TensorParallelStage<CpuTensor>> load(ModelDirectory model, StagePlan plan, int degree,
                                                            Consumer<StageSpec> progress) {
        TensorParallelism tp = new TensorParallelism(model.config(), degree);
        List<TensorParallelStage<CpuTensor>> stages = new ArrayList<>();
        List<ShardWeights<CpuTensor>> loose = new ArrayList<>();
        CpuNeuralOps loaderOps = new CpuNeuralOps();
        try (CheckpointSource source = model.openSource(CheckpointSource.DEFAULT_MAX_OPEN_SHARDS)) {
            ShardedWeightsLoader<CpuTensor> loader = new ShardedWeightsLoader<>(source, tp, loaderOps, loaderOps::fromBuffer);
            for (StageSpec spec : plan.stages()) {
                List<LlamaShard<CpuTensor>> shards = new ArrayList<>();
                for (int r = 0; r < degree; r++) {
                    ShardWeights<CpuTensor> weights = loader.load(spec, r);
                    loose.add(weights);
                    shards.add(new LlamaShard<>(tp, weights, new CpuNeuralOps()));
                }
                stages.add(new TensorParallelStage<>(shards));
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
