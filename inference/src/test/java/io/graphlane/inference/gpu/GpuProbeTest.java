package io.graphlane.inference.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.inference.model.Fixture;
import io.graphlane.inference.weights.WeightFormat;
import org.junit.jupiter.api.Test;

/** What the GPU check's figures divide by, computed without a device from the fixture's shapes. */
class GpuProbeTest {

    @Test
    void aTokensGemmFlopsCountEveryLayerMatrixOnce() {
        // tiny-llama: hidden 64, intermediate 172, 4 layers, 4 heads and 2 kv heads of 16
        long perLayer = 64L * 64 /* q */ + 2L * 32 * 64 /* k, v */ + 64L * 64 /* o */ + 3L * 172 * 64 /* gate, up, down */;
        assertEquals(4 * perLayer, GpuProbe.layerMatrixElements(Fixture.dir("")));
    }

    @Test
    void bf16WeightsHeldAsStoredReadAboutHalfTheBytesOfF32() {
        long stored = GpuProbe.bytesPerToken(Fixture.dir("bf16"), WeightFormat.STORED);
        long f32 = GpuProbe.bytesPerToken(Fixture.dir("bf16"), WeightFormat.F32);
        assertEquals(f32, GpuProbe.bytesPerToken(Fixture.dir(""), WeightFormat.STORED), "an F32 checkpoint as stored is F32");
        assertTrue(stored < 0.55 * f32 && stored > 0.45 * f32, stored + " against " + f32);
    }
}
