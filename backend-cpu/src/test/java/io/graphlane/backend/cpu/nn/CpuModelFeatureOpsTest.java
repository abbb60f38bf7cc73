package io.graphlane.backend.cpu.nn;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.graphlane.core.nn.GateActivation;
import io.graphlane.core.nn.RotaryTable;
import io.graphlane.core.nn.ShapeMismatchException;
import org.junit.jupiter.api.Test;

/** The ops behind the Hugging Face model features: table-driven RoPE (partial width, scaling), gated activations, head norms. */
class CpuModelFeatureOpsTest {
    private final CpuNeuralOps ops = new CpuNeuralOps();

    private float[] host(CpuTensor t) {
        float[] out = new float[t.rows() * t.cols()];
        ops.toHost(t, out);
        return out;
    }

    @Test
    void ropeRotatesOnlyTheTableWidthOfEachHeadAndScalesCosAndSin() {
        // two heads of 6 features, the first 4 rotating (pairs (0,2), (1,3)) with frequencies 0.5 and 0.25, scaled by 2
        RotaryTable table = new RotaryTable(4, new double[] {0.5, 0.25}, 2.0);
        float[] x = {1, 2, 3, 4, 5, 6, -1, -2, -3, -4, -5, -6};
        CpuTensor t = ops.fromHost(x, 1, 12);
        ops.rope(t, new int[] {3}, 6, table);
        float[] expected = new float[12];
        for (int h = 0; h < 2; h++) {
            int b = 6 * h;
            for (int i = 0; i < 2; i++) {
                double angle = 3 * (i == 0 ? 0.5 : 0.25);
                double c = 2 * Math.cos(angle);
                double s = 2 * Math.sin(angle);
                expected[b + i] = (float) (x[b + i] * c - x[b + i + 2] * s);
                expected[b + i + 2] = (float) (x[b + i + 2] * c + x[b + i] * s);
            }
            expected[b + 4] = x[b + 4];
            expected[b + 5] = x[b + 5];
        }
        assertArrayEquals(expected, host(t), 1e-5f);
    }

    @Test
    void theStandardTableIsThePlainRope() {
        float[] x = new float[2 * 16];
        for (int i = 0; i < x.length; i++) {
            x[i] = (float) Math.sin(i + 1);
        }
        CpuTensor a = ops.fromHost(x, 2, 16);
        CpuTensor b = ops.fromHost(x, 2, 16);
        ops.rope(a, new int[] {5, 200}, 8, 10000f);
        ops.rope(b, new int[] {5, 200}, 8, RotaryTable.standard(8, 10000));
        assertArrayEquals(host(a), host(b), 0f);
    }

    @Test
    void aTableWiderThanTheHeadIsRefused() {
        CpuTensor t = ops.allocate(1, 8);
        assertThrows(ShapeMismatchException.class, () -> ops.rope(t, new int[] {0}, 4, RotaryTable.standard(8, 10000)));
    }

    @Test
    void gatedMulAppliesEachActivationToTheGate() {
        CpuTensor gate = ops.fromHost(new float[] {-2, -0.5f, 0, 1, 3}, 1, 5);
        CpuTensor up = ops.fromHost(new float[] {1, 2, 3, 4, 5}, 1, 5);
        // gelu(1) = Phi(1) = 0.841344746, gelu_tanh(1) = 0.5 (1 + tanh(sqrt(2/pi) 1.044715)) = 0.841191990
        CpuTensor out = ops.allocate(1, 5);
        ops.gatedMul(gate, up, out, GateActivation.GELU);
        assertEquals(0.841344746f * 4, host(out)[3], 1e-6f);
        assertEquals(-2 * 0.0227501319f, host(out)[0], 1e-6f);
        ops.gatedMul(gate, up, out, GateActivation.GELU_TANH);
        assertEquals(0.841191990f * 4, host(out)[3], 1e-6f);
        ops.gatedMul(gate, up, out, GateActivation.SILU);
        assertEquals((float) (3 / (1 + Math.exp(-3)) * 5), host(out)[4], 1e-5f);
    }

    @Test
    void rmsNormHeadsNormsEachHeadOnItsOwn() {
        CpuTensor x = ops.fromHost(new float[] {3, 4, 0, 2}, 1, 4);
        CpuTensor w = ops.fromHost(new float[] {1, 2}, 1, 2);
        ops.rmsNormHeads(x, w, 0f, 2);
        // head (3, 4): rms = sqrt(12.5); head (0, 2): rms = sqrt(2)
        double r1 = Math.sqrt(12.5);
        double r2 = Math.sqrt(2);
        assertArrayEquals(new float[] {(float) (3 / r1), (float) (8 / r1), 0, (float) (4 / r2)}, host(x), 1e-6f);
    }
}
