package io.graphlane.inference.moe;

import io.graphlane.backend.cpu.nn.CpuNeuralOps;
import io.graphlane.backend.cpu.nn.CpuTensor;
import io.graphlane.checkpoint.CheckpointSource;
import io.graphlane.inference.generate.StagedModel;
import io.graphlane.inference.llama.LlamaStage;
import io.graphlane.inference.llama.MoeBlock;
import io.graphlane.inference.llama.StageWeights;
import io.graphlane.inference.model.CpuModels;
import io.graphlane.inference.model.ModelDirectory;
import io.graphlane.inference.stage.StagePlan;
import io.graphlane.inference.stage.StageSpec;
import io.graphlane.inference.weights.StageWeightsAssembly;
import io.graphlane.inference.weights.StageWeightsLoader;
import java.util.ArrayList;
import java.util.List;

/** CPU models whose mixture-of-experts layers run over expert lanes ({@code --expert-parallel}). */
public final class ExpertParallelModels {
    private ExpertParallelModels() {
    }

    /** A staged model and the expert lanes of each of its stages. */
    public record Parallel(StagedModel<CpuTensor> model, List<ExpertParallelExperts> lanes) {
    }

    /**
     * {@code model} split into {@code stageCount} stages run in sequence on the calling thread, each stage's sparse
     * layers over {@code expertParallel} expert lanes of its own; closing the model stops the lanes and frees the weights.
     *
     * @throws io.graphlane.core.GraphlaneException if the model has no experts or {@code expertParallel} does not divide them
     */
    public static Parallel staged(ModelDirectory model, int stageCount, int expertParallel) {
        CpuNeuralOps ops = new CpuNeuralOps();
        StagePlan plan = StagePlan.balanced(model.config().layerCount(), stageCount);
        List<LlamaStage<CpuTensor>> stages = new ArrayList<>();
        List<ExpertParallelExperts> lanes = new ArrayList<>();
        try (CheckpointSource source = model.openSource(CheckpointSource.DEFAULT_MAX_OPEN_SHARDS)) {
            StageWeightsLoader<CpuTensor> loader = CpuModels.loader(model, source, ops);
            try {
                for (StageSpec spec : plan.stages()) {
                    ExpertParallelExperts experts = new ExpertParallelExperts(model.config(), expertParallel);
                    lanes.add(experts);
                    StageWeights<CpuTensor> weights = loader.load(spec);
                    stages.add(new LlamaStage<>(model.config(), weights, ops, new MoeBlock<>(ops, model.config(), experts)));
                }
            } catch (RuntimeException e) {
                for (LlamaStage<CpuTensor> stage : stages) {
                    StageWeightsAssembly.release(stage.weights(), ops);
                }
                lanes.forEach(ExpertParallelExperts::close);
                throw e;
            }
        }
        List<LlamaStage<CpuTensor>> built = List.copyOf(stages);
        StagedModel<CpuTensor> staged = new StagedModel<>(built, () -> {
            built.forEach(s -> StageWeightsAssembly.release(s.weights(), ops));
            lanes.forEach(ExpertParallelExperts::close);
        });
        return new Parallel(staged, List.copyOf(lanes));
    }
}
