package io.graphlane.inference.model;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.backend.cpu.nn.CpuTensor;
import io.graphlane.backend.cpu.nn.PackedMatrix;
import io.graphlane.core.GraphlaneException;
import io.graphlane.inference.generate.StagedModel;
import io.graphlane.inference.llama.LayerWeights;
import io.graphlane.inference.llama.LlamaTensors;
import io.graphlane.inference.llama.Segment;
import io.graphlane.inference.weights.CorruptCheckpoints;
import io.graphlane.inference.weights.WeightFormat;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@link CpuModels#supervised}: the stages the logits command runs, loaded through the materialization supervisor as
 * the pipeline loads them, against the copying loader ({@link CpuModels#staged}) and the PyTorch reference.
 */
class SupervisedStagedModelTest {
    private static final float BF16_TOLERANCE = 2e-3f;

    @ParameterizedTest(name = "{0} stage(s)")
    @ValueSource(ints = {1, 3})
    void storedBf16MatricesStayBf16AndGiveTheCopyingLoadersLogitsExactly(int stages) {
        ModelDirectory dir = ModelDirectory.open(Fixture.dir("bf16"));
        try (StagedModel<CpuTensor> supervised = CpuModels.supervised(dir, stages, WeightFormat.STORED);
             StagedModel<CpuTensor> copied = CpuModels.staged(dir, stages, WeightFormat.STORED)) {
            assertEquals(stages, supervised.stages().size());
            LayerWeights<CpuTensor> layer = supervised.stages().get(0).weights().layers().get(0);
            assertEquals(PackedMatrix.Encoding.BF16, layer.wq().packed().encoding(), "q_proj held 16-bit, not widened");
            assertEquals(PackedMatrix.Encoding.BF16, layer.wDown().packed().encoding(), "down_proj held 16-bit, not widened");
            assertEquals(PackedMatrix.Encoding.BF16, supervised.stages().get(stages - 1).weights().lmHead().packed().encoding(),
                    "the head held 16-bit");
            long id = 1;
            for (Fixture.Prompt prompt : Fixture.prompts()) {
                List<Segment> segment = List.of(new Segment(id, 0, prompt.ids().length));
                float[] expected = copied.step(segment, prompt.ids())[0];
                float[] found = supervised.step(segment, prompt.ids())[0];
                copied.endRequest(id);
                supervised.endRequest(id++);
                assertArrayEquals(expected, found, "the same weights and kernels give the same logits");
                float error = Fixture.maxAbsDifference(prompt.lastLogitsBf16(), found);
                assertTrue(error <= BF16_TOLERANCE, "bf16 logits of a " + prompt.ids().length + "-token prompt are off by " + error);
            }
        }
    }

    @Test
    void f32WidensEveryMatrixAndMatchesTheBf16Reference() {
        try (StagedModel<CpuTensor> model = CpuModels.supervised(ModelDirectory.open(Fixture.dir("bf16")), 2, WeightFormat.F32)) {
            LayerWeights<CpuTensor> layer = model.stages().get(0).weights().layers().get(0);
            assertNull(layer.wq().packed(), "--weights f32 widens q_proj");
            Fixture.Prompt prompt = Fixture.prompts().get(0);
            float[] last = model.step(List.of(new Segment(1, 0, prompt.ids().length)), prompt.ids())[0];
            float error = Fixture.maxAbsDifference(prompt.lastLogitsBf16(), last);
            assertTrue(error <= BF16_TOLERANCE, "widened bf16 logits are off by " + error);
        }
    }

    @Test
    void aMissingTensorIsOneErrorNamingIt(@TempDir Path tmp) {
        String missing = LlamaTensors.layer(2, "mlp.up_proj.weight");
        Path broken = CorruptCheckpoints.without(Fixture.dir(""), tmp, missing);
        GraphlaneException e = assertThrows(GraphlaneException.class,
                () -> CpuModels.supervised(ModelDirectory.open(broken), 2, WeightFormat.STORED));
        assertTrue(e.getMessage().contains(missing), e.getMessage());
        assertFalse(e.getMessage().contains("\n"), "one line: " + e.getMessage());
    }
}
