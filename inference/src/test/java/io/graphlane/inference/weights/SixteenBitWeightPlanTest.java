package io.graphlane.inference.weights;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.checkpoint.CheckpointSource;
import io.graphlane.core.GraphlaneException;
import io.graphlane.core.tensor.DType;
import io.graphlane.inference.llama.LlamaTensors;
import io.graphlane.inference.llama.LlamaTensors.Expected;
import io.graphlane.inference.model.Fixture;
import io.graphlane.inference.model.ModelDirectory;
import io.graphlane.inference.stage.StagePlan;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * What {@code --weights} means on a backend that holds 16-bit but no 8-bit weights (a GPU): the same as on the CPU, except
 * that stored F16/BF16 matrices stay 16-bit whatever the host's SIMD, and q8 is refused.
 */
class SixteenBitWeightPlanTest {

    private static List<Expected> wholeModel(ModelDirectory model) {
        return LlamaTensors.forStage(model.config(), StagePlan.balanced(model.config().layerCount(), 1).stages().get(0));
    }

    @Test
    void storedBf16MatricesAreLeasedAsTheyAreAndVectorsWidened() {
        ModelDirectory bf16 = ModelDirectory.open(Fixture.dir("bf16"));
        try (CheckpointSource source = bf16.openSource(CheckpointSource.DEFAULT_MAX_OPEN_SHARDS)) {
            for (Expected e : wholeModel(bf16)) {
                WeightPlan plan = WeightPlan.of(source, e, WeightFormat.STORED, true, true);
                if (e.vector()) {
                    assertEquals(DType.F32, plan.realized().dtype(), e.name());
                    assertTrue(plan.recipe().isPresent(), e.name() + ": a BF16 vector is cast to F32");
                } else {
                    assertEquals(DType.BF16, plan.realized().dtype(), e.name());
                    assertFalse(plan.recipe().isPresent(), e.name() + ": the checkpoint's bytes, no recipe");
                }
                WeightPlan f32 = WeightPlan.of(source, e, WeightFormat.F32, true, true);
                assertEquals(DType.F32, f32.realized().dtype(), e.name());
            }
            long stored = WeightPlan.decodeBytesPerToken(source, bf16.config(), WeightFormat.STORED, true);
            long widened = WeightPlan.decodeBytesPerToken(source, bf16.config(), WeightFormat.F32, true);
            assertTrue(stored < widened * 0.55 && stored > widened * 0.45, "16-bit matrices read half the bytes: " + stored
                    + " against " + widened);
        }
    }

    @Test
    void bf16RoundsAnF32CheckpointsMatricesAtLoad() {
        ModelDirectory f32 = ModelDirectory.open(Fixture.dir(""));
        try (CheckpointSource source = f32.openSource(CheckpointSource.DEFAULT_MAX_OPEN_SHARDS)) {
            for (Expected e : wholeModel(f32)) {
                WeightPlan plan = WeightPlan.of(source, e, WeightFormat.BF16, true, true);
                assertEquals(e.vector() ? DType.F32 : DType.BF16, plan.realized().dtype(), e.name());
                assertEquals(!e.vector(), plan.recipe().isPresent(), e.name());
                WeightPlan stored = WeightPlan.of(source, e, WeightFormat.STORED, true, true);
                assertEquals(DType.F32, stored.realized().dtype(), e.name());
                assertFalse(stored.recipe().isPresent(), e.name());
            }
        }
    }

    @Test
    void q8IsRefusedNamingTheFormatsTheBackendHolds() {
        GraphlaneException e = assertThrows(GraphlaneException.class, () -> WeightPlan.requireHoldable(WeightFormat.Q8, true, true));
        assertEquals("--weights q8 is not supported on this backend: it holds F32, BF16 or F16 weights; use --weights stored, bf16"
                + " or f32, or --backend cpu", e.getMessage());
        WeightPlan.requireHoldable(WeightFormat.BF16, true, true);
        WeightPlan.requireHoldable(WeightFormat.STORED, true, true);
        WeightPlan.requireHoldable(WeightFormat.Q8, true, false); // the CPU holds it
    }
}
