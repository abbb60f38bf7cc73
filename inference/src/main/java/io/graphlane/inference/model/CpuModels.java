package io.graphlane.inference.model;

import io.graphlane.backend.cpu.nn.CpuNeuralOps;
import io.graphlane.backend.cpu.nn.CpuTensor;
import io.graphlane.checkpoint.CheckpointSource;
import io.graphlane.inference.generate.StagedModel;
import io.graphlane.inference.llama.LlamaStage;
import io.graphlane.inference.llama.StageWeights;
import io.graphlane.inference.stage.StagePlan;
import io.graphlane.inference.stage.StageSpec;
import io.graphlane.inference.weights.CheckpointWeightsLoader;
import io.graphlane.inference.weights.CpuFormatWeightsLoader;
import io.graphlane.inference.weights.StageWeightsAssembly;
import io.graphlane.inference.weights.StageWeightsLoader;
import io.graphlane.inference.weights.WeightFormat;
import java.util.ArrayList;
import java.util.List;

/** Builds CPU models from model directories. */
public final class CpuModels {
    private CpuModels() {
    }

    /** A loader of {@code model}'s stage weights into F32 CPU tensors made by {@code ops}, reading {@code source}. */
    public static StageWeightsLoader<CpuTensor> loader(ModelDirectory model, CheckpointSource source, CpuNeuralOps ops) {
        return new CheckpointWeightsLoader<>(source, model.config(), ops, ops::fromBuffer);
    }

    /**
     * A loader of {@code model}'s stage weights into CPU tensors held in {@code format} (F32 tensors made by {@code ops},
     * 16-bit and 8-bit weights packed), reading {@code source}; every tensor is released through {@code ops}.
     */
    public static StageWeightsLoader<CpuTensor> loader(ModelDirectory model, CheckpointSource source, CpuNeuralOps ops,
                                                       WeightFormat format) {
        return format == WeightFormat.F32 ? loader(model, source, ops) : new CpuFormatWeightsLoader(source, model.config(), ops, format);
    }

    /**
     * {@code model} split into {@code stageCount} stages run in sequence on the calling thread, with
     * every weight loaded in F32 (and every lease released) before it returns.
     */
    public static StagedModel<CpuTensor> staged(ModelDirectory model, int stageCount) {
        return staged(model, stageCount, WeightFormat.F32);
    }

    /** As {@link #staged(ModelDirectory, int)}, with the weights held in {@code format}. */
    public static StagedModel<CpuTensor> staged(ModelDirectory model, int stageCount, WeightFormat format) {
        CpuNeuralOps ops = new CpuNeuralOps();
        StagePlan plan = StagePlan.balanced(model.config().layerCount(), stageCount);
        List<LlamaStage<CpuTensor>> stages = new ArrayList<>();
        try (CheckpointSource source = model.openSource(CheckpointSource.DEFAULT_MAX_OPEN_SHARDS)) {
            StageWeightsLoader<CpuTensor> loader = loader(model, source, ops, format);
            try {
                for (StageSpec spec : plan.stages()) {
                    StageWeights<CpuTensor> weights = loader.load(spec);
                    stages.add(new LlamaStage<>(model.config(), weights, ops));
                }
            } catch (RuntimeException e) {
                for (LlamaStage<CpuTensor> stage : stages) {
                    StageWeightsAssembly.release(stage.weights(), ops);
                }
                throw e;
            }
        }
        return new StagedModel<>(stages);
    }
}
