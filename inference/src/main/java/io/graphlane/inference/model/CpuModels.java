package io.graphlane.inference.model;

import io.graphlane.backend.cpu.nn.CpuNeuralOps;
import io.graphlane.backend.cpu.nn.CpuTensor;
import io.graphlane.backend.cpu.param.CpuParameter;
import io.graphlane.checkpoint.CheckpointSource;
import io.graphlane.inference.generate.StagedModel;
import io.graphlane.inference.llama.LlamaStage;
import io.graphlane.inference.llama.StageWeights;
import io.graphlane.inference.stage.StagePlan;
import io.graphlane.inference.stage.StageSpec;
import io.graphlane.inference.weights.CheckpointWeightsLoader;
import io.graphlane.inference.weights.CpuFormatWeightsLoader;
import io.graphlane.inference.weights.CpuLoadingSupervisor;
import io.graphlane.inference.weights.CpuWeightSlots;
import io.graphlane.inference.weights.StageWeightsAssembly;
import io.graphlane.inference.weights.StageWeightsLoader;
import io.graphlane.inference.weights.SupervisedWeightsLoader;
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
     * every weight loaded in F32 (and every lease released) before it returns. This loads without the
     * materialization supervisor, copying every tensor (the reference tests compare the supervised loads
     * against); a command loads as the pipeline does, with {@link #supervised}.
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

    /**
     * {@code model} split into {@code stageCount} stages run in sequence on the calling thread, each stage's weights
     * loaded as the pipeline's CPU backend loads them: one atomic unit of a materialization supervisor
     * ({@link CpuLoadingSupervisor}) through a {@link SupervisedWeightsLoader} holding them in {@code format}, so that
     * with {@link WeightFormat#STORED} aligned F32 and F16/BF16 matrices are used in place in the memory-mapped
     * checkpoint. Closing the model frees its caches, then releases every weight.
     *
     * @throws io.graphlane.core.GraphlaneException naming the checkpoint, the stage and the tensor at fault; then nothing stays bound
     */
    public static StagedModel<CpuTensor> supervised(ModelDirectory model, int stageCount, WeightFormat format) {
        StagePlan plan = StagePlan.balanced(model.config().layerCount(), stageCount);
        return CpuLoadingSupervisor.run("graphlane-staged-load", (supervisor, scheduler) -> {
            List<LlamaStage<CpuTensor>> stages = new ArrayList<>();
            SupervisedWeightsLoader<CpuParameter, CpuTensor> loader = null;
            // A stage's leases are all taken at once, so every shard may be pinned together.
            int maxOpen = Math.max(CheckpointSource.DEFAULT_MAX_OPEN_SHARDS, model.checkpoint().catalog().shards().size());
            try (CheckpointSource source = model.openSource(maxOpen)) {
                loader = new SupervisedWeightsLoader<>(supervisor, scheduler, source, model.config(),
                        CpuLoadingSupervisor.DEFAULT_LOAD_TIMEOUT, new CpuWeightSlots(), format);
                CpuNeuralOps ops = new CpuNeuralOps();
                for (StageSpec spec : plan.stages()) {
                    stages.add(new LlamaStage<>(model.config(), loader.load(spec), ops));
                }
                return new StagedModel<>(stages, loader::close);
            } catch (RuntimeException | Error e) {
                stages.forEach(LlamaStage::close);
                if (loader != null) {
                    loader.close();
                }
                throw e;
            }
        });
    }
}
