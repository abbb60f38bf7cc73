package io.graphlane.inference.llama;

import io.graphlane.backend.cpu.nn.CpuNeuralOps;
import io.graphlane.backend.cpu.nn.CpuTensor;
import io.graphlane.inference.generate.StagedModel;
import io.graphlane.inference.stage.StagePlan;
import io.graphlane.inference.stage.StageSpec;
import io.graphlane.inference.weights.StageWeightsAssembly;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** Small CPU models built from in-memory weights, split into any number of stages. */
public final class TestModels {
    private TestModels() {
    }

    /** A small GQA configuration: hidden 32, 4 heads over 2 kv heads, 4 layers, vocabulary 50; biases on q/k/v and o if asked. */
    public static LlamaConfig small(boolean tied, boolean bias) {
        return new LlamaConfig(32, 56, 4, 4, 2, 8, 50, 1e-5f, 10000f, tied, bias, bias, 128);
    }

    /** The model of {@code tensors} split into {@code stageCount} stages, all on one {@link CpuNeuralOps}. */
    public static StagedModel<CpuTensor> staged(LlamaConfig config, Map<String, float[]> tensors, int stageCount) {
        CpuNeuralOps ops = new CpuNeuralOps();
        List<LlamaStage<CpuTensor>> stages = new ArrayList<>();
        for (StageSpec spec : StagePlan.balanced(config.layerCount(), stageCount).stages()) {
            StageWeights<CpuTensor> weights = StageWeightsAssembly.assemble(config, spec, ops,
                    expected -> ops.fromHost(tensors.get(expected.name()), expected.rows(), expected.cols()));
            stages.add(new LlamaStage<>(config, weights, ops));
        }
        return new StagedModel<>(stages);
    }
}
