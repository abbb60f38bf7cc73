package io.graphlane.inference.weights;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.backend.cpu.nn.CpuNeuralOps;
import io.graphlane.backend.cpu.nn.CpuTensor;
import io.graphlane.checkpoint.CheckpointSource;
import io.graphlane.core.GraphlaneException;
import io.graphlane.inference.llama.LlamaConfig;
import io.graphlane.inference.llama.StageWeights;
import io.graphlane.inference.model.Fixture;
import io.graphlane.inference.model.ModelDirectory;
import io.graphlane.inference.stage.StagePlan;
import io.graphlane.inference.stage.StageSpec;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Loading stage weights from checkpoint leases: every lease released, a failure releases what was made and names the tensor. */
class CheckpointWeightsLoaderTest {

    @Test
    void everyLeaseIsReleasedAfterAStageLoads() {
        ModelDirectory model = ModelDirectory.open(Fixture.dir("bf16"));
        CpuNeuralOps ops = new CpuNeuralOps();
        try (CheckpointSource source = model.openSource(4)) {
            CheckpointWeightsLoader<CpuTensor> loader = new CheckpointWeightsLoader<>(source, model.config(), ops, ops::fromBuffer);
            for (StageSpec spec : StagePlan.balanced(4, 2).stages()) {
                StageWeights<CpuTensor> weights = loader.load(spec);
                assertEquals(2, weights.layers().size());
                assertEquals(0, source.openLeaseCount(), "leases still open after " + spec + ": " + source.openLeases());
                StageWeightsAssembly.release(weights, ops);
            }
        }
    }

    @Test
    void aMisshapenTensorFailsTheStageNamesBothShapesAndReleasesWhatWasMade() {
        ModelDirectory model = ModelDirectory.open(Fixture.dir(""));
        LlamaConfig real = model.config();
        LlamaConfig wider = new LlamaConfig(real.hiddenSize(), real.intermediateSize() + 1, real.layerCount(), real.headCount(),
                real.kvHeadCount(), real.headDim(), real.vocabSize(), real.rmsNormEps(), real.ropeTheta(), false, false, false,
                real.maxPositions());
        CpuNeuralOps ops = new CpuNeuralOps();
        List<CpuTensor> made = new ArrayList<>();
        try (CheckpointSource source = model.openSource(4)) {
            CheckpointWeightsLoader<CpuTensor> loader = new CheckpointWeightsLoader<>(source, wider, ops, (values, rows, cols) -> {
                CpuTensor t = ops.fromBuffer(values, rows, cols);
                made.add(t);
                return t;
            });
            GraphlaneException e = assertThrows(GraphlaneException.class, () -> loader.load(StagePlan.balanced(4, 1).stage(0)));
            assertTrue(e.getMessage().contains("model.layers.0.mlp.gate_proj.weight") && e.getMessage().contains("[172, 64]")
                    && e.getMessage().contains("[173, 64]"), e.getMessage());
            assertEquals(0, source.openLeaseCount());
        }
        assertTrue(made.size() >= 5, "tensors before the gate projection were made: " + made.size());
        assertTrue(made.stream().allMatch(CpuTensor::isReleased), "every tensor made before the failure was released");
    }
}
