package io.graphlane.backend.cpu.nn;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.core.nn.NeuralOps;
import java.util.Random;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

/**
 * The ops Gemma adds, against their formulas computed here in double: RMSNorm scaled by {@code 1 + w} (whole rows, fused
 * with the residual add, per head), the soft cap {@code c · tanh(x / c)}, the element-wise scale, and attention with a
 * score scale other than {@code 1/sqrt(headDim)} and soft-capped scores, through the Vector API and OpenBLAS forms.
 */
class CpuGemmaOpsTest {
    private final CpuNeuralOps ops = new CpuNeuralOps();
    private final Random random = new Random(29);

    private float[] host(CpuTensor t) {
        float[] out = new float[t.rows() * t.cols()];
        ops.toHost(t, out);
        return out;
    }

    private float[] randoms(int n, double scale) {
        float[] out = new float[n];
        for (int i = 0; i < n; i++) {
            out[i] = (float) (random.nextGaussian() * scale);
        }
        return out;
    }

    /** {@code x / sqrt(mean(x²) + eps) · (offset + w)} over each group of {@code width} values, in double. */
    private static float[] norm(float[] x, int width, float[] w, float eps, double offset) {
        float[] out = new float[x.length];
        for (int base = 0; base < x.length; base += width) {
            double ss = 0;
            for (int i = 0; i < width; i++) {
                ss += (double) x[base + i] * x[base + i];
            }
            double inv = 1 / Math.sqrt(ss / width + eps);
            for (int i = 0; i < width; i++) {
                out[base + i] = (float) (x[base + i] * inv * (offset + w[i]));
            }
        }
        return out;
    }

    private static void assertClose(float[] expected, float[] found, double relative, String what) {
        double largest = 0;
        for (float v : expected) {
            largest = Math.max(largest, Math.abs(v));
        }
        for (int i = 0; i < expected.length; i++) {
            assertEquals(expected[i], found[i], relative * largest, what + " at " + i);
        }
    }

    @Test
    void rmsNormWithOffsetOneScalesByOnePlusTheWeight() {
        float[] x = randoms(3 * 16, 2);
        float[] w = randoms(16, 0.3);
        CpuTensor out = ops.allocate(3, 16);
        ops.rmsNorm(ops.fromHost(x, 3, 16), ops.fromHost(w, 1, 16), 1e-6f, 1f, out);
        assertClose(norm(x, 16, w, 1e-6f, 1), host(out), 1e-6, "rmsNorm (1 + w)");
        // and it is not the plain norm: the weights here are the difference from 1
        CpuTensor plain = ops.allocate(3, 16);
        ops.rmsNorm(ops.fromHost(x, 3, 16), ops.fromHost(w, 1, 16), 1e-6f, plain);
        assertClose(norm(x, 16, w, 1e-6f, 0), host(plain), 1e-6, "rmsNorm w");
    }

    @Test
    void rmsNormWithOffsetWorksInPlace() {
        float[] x = randoms(2 * 8, 1);
        float[] w = randoms(8, 0.3);
        CpuTensor t = ops.fromHost(x, 2, 8);
        ops.rmsNorm(t, ops.fromHost(w, 1, 8), 1e-6f, 1f, t);
        assertClose(norm(x, 8, w, 1e-6f, 1), host(t), 1e-6, "in place");
    }

    @Test
    void addRmsNormWithOffsetAddsThenNormsByOnePlusTheWeight() {
        float[] x = randoms(2 * 12, 1);
        float[] r = randoms(2 * 12, 1);
        float[] w = randoms(12, 0.3);
        float[] sum = new float[x.length];
        for (int i = 0; i < x.length; i++) {
            sum[i] = x[i] + r[i];
        }
        CpuTensor xs = ops.fromHost(x, 2, 12);
        CpuTensor out = ops.allocate(2, 12);
        ops.addRmsNorm(xs, ops.fromHost(r, 2, 12), ops.fromHost(w, 1, 12), 1e-6f, 1f, out);
        assertArrayEquals(sum, host(xs), 0f, "the residual sum");
        assertClose(norm(sum, 12, w, 1e-6f, 1), host(out), 1e-6, "the norm of the sum");
    }

    @Test
    void rmsNormHeadsWithOffsetNormsEveryHeadByOnePlusTheWeight() {
        float[] x = randoms(2 * 4 * 8, 3);
        float[] w = randoms(8, 0.3);
        CpuTensor t = ops.fromHost(x, 2, 32);
        ops.rmsNormHeads(t, ops.fromHost(w, 1, 8), 1e-6f, 8, 1f);
        assertClose(norm(x, 8, w, 1e-6f, 1), host(t), 1e-6, "per head (1 + w)");
    }

    @Test
    void softcapIsCapTimesTanhOfXOverCap() {
        float[] x = {-1000f, -50f, -5f, -1f, -0.01f, 0f, 0.01f, 1f, 5f, 50f, 1000f};
        CpuTensor t = ops.fromHost(x, 1, x.length);
        ops.softcap(t, 5f);
        float[] found = host(t);
        for (int i = 0; i < x.length; i++) {
            assertEquals(5 * Math.tanh(x[i] / 5.0), found[i], 1e-6, "softcap of " + x[i]);
            assertTrue(Math.abs(found[i]) <= 5f, "within the cap: " + found[i]);
        }
        assertEquals(-5f, found[0]);
        assertEquals(5f, found[x.length - 1]);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ops.softcap(t, 0f));
        assertTrue(e.getMessage().contains("cap"), e.getMessage());
    }

    @Test
    void scaleMultipliesEveryElement() {
        float[] x = randoms(3 * 5, 1);
        CpuTensor t = ops.fromHost(x, 3, 5);
        ops.scale(t, 8f);
        float[] found = host(t);
        for (int i = 0; i < x.length; i++) {
            assertEquals(x[i] * 8f, found[i], 0f);
        }
    }

    /** Naive attention in double: scores {@code scale · q·k}, capped when {@code cap > 0}, masked to the window, softmax. */
    private static float[] attention(float[] q, float[] k, float[] v, int[] positions, int heads, int kvHeads, int headDim,
                                     int window, double scale, double cap) {
        int group = heads / kvHeads;
        int kvWidth = kvHeads * headDim;
        float[] out = new float[positions.length * heads * headDim];
        for (int r = 0; r < positions.length; r++) {
            for (int h = 0; h < heads; h++) {
                int kvh = h / group;
                int p = positions[r];
                double[] s = new double[p + 1];
                double max = Double.NEGATIVE_INFINITY;
                for (int j = 0; j <= p; j++) {
                    if (p - j >= window) {
                        s[j] = Double.NEGATIVE_INFINITY;
                        continue;
                    }
                    double dot = 0;
                    for (int d = 0; d < headDim; d++) {
                        dot += (double) q[(r * heads + h) * headDim + d] * k[j * kvWidth + kvh * headDim + d];
                    }
                    dot *= scale;
                    if (cap > 0) {
                        dot = cap * Math.tanh(dot / cap);
                    }
                    s[j] = dot;
                    max = Math.max(max, dot);
                }
                double sum = 0;
                for (int j = 0; j <= p; j++) {
                    s[j] = Math.exp(s[j] - max);
                    sum += s[j];
                }
                for (int d = 0; d < headDim; d++) {
                    double acc = 0;
                    for (int j = 0; j <= p; j++) {
                        acc += s[j] / sum * v[j * kvWidth + kvh * headDim + d];
                    }
                    out[(r * heads + h) * headDim + d] = (float) acc;
                }
            }
        }
        return out;
    }

    @ParameterizedTest(name = "window {0}")
    @ValueSource(ints = {3, NeuralOps.NO_WINDOW})
    void attentionWithAScoreScaleAndASoftCapMatchesTheFormula(int window) {
        int heads = 4, kvHeads = 2, headDim = 16, rows = 10;
        // large scores, so the cap of 5 bends them hard
        float[] k = randoms(rows * kvHeads * headDim, 2);
        float[] v = randoms(rows * kvHeads * headDim, 1);
        CpuTensor keys = ops.fromHost(k, rows, kvHeads * headDim);
        CpuTensor values = ops.fromHost(v, rows, kvHeads * headDim);
        int[] positions = {6, 7, 8, 9};
        float[] q = randoms(positions.length * heads * headDim, 2);
        CpuTensor query = ops.fromHost(q, positions.length, heads * headDim);
        float scale = (float) (1 / Math.sqrt(24));
        float[] expected = attention(q, k, v, positions, heads, kvHeads, headDim, window, scale, 5);
        CpuTensor out = ops.allocate(positions.length, heads * headDim);
        ops.attention(query, keys, values, positions, heads, kvHeads, headDim, window, scale, 5f, out);
        assertClose(expected, host(out), 1e-5, "attention");
        CpuTensor blas = ops.allocate(positions.length, heads * headDim);
        ops.blasAttention(query, keys, values, positions, heads, kvHeads, headDim, window, scale, 5f, blas);
        assertClose(expected, host(blas), 1e-5, "OpenBLAS attention");
        // without the cap the same scores give another result: the cap is applied, not a no-op here
        float[] uncapped = attention(q, k, v, positions, heads, kvHeads, headDim, window, scale, 0);
        double most = 0;
        for (int i = 0; i < expected.length; i++) {
            most = Math.max(most, Math.abs(expected[i] - uncapped[i]));
        }
        assertTrue(most > 0.05, "the cap changes the output by only " + most);
    }

    @Test
    void thePlainScaleWithoutACapIsTheOrdinaryAttention() {
        int heads = 2, kvHeads = 1, headDim = 8, rows = 5;
        float[] k = randoms(rows * headDim, 1);
        float[] v = randoms(rows * headDim, 1);
        float[] q = randoms(2 * heads * headDim, 1);
        CpuTensor a = ops.allocate(2, heads * headDim);
        CpuTensor b = ops.allocate(2, heads * headDim);
        ops.attention(ops.fromHost(q, 2, heads * headDim), ops.fromHost(k, rows, headDim), ops.fromHost(v, rows, headDim),
                new int[] {3, 4}, heads, kvHeads, headDim, a);
        ops.attention(ops.fromHost(q, 2, heads * headDim), ops.fromHost(k, rows, headDim), ops.fromHost(v, rows, headDim),
                new int[] {3, 4}, heads, kvHeads, headDim, NeuralOps.NO_WINDOW, NeuralOps.plainAttentionScale(headDim), 0f, b);
        assertArrayEquals(host(a), host(b), 0f);
    }

    @Test
    void aNonPositiveScaleOrANegativeCapIsRefused() {
        CpuTensor q = ops.allocate(1, 8);
        CpuTensor kv = ops.allocate(1, 8);
        CpuTensor out = ops.allocate(1, 8);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> ops.attention(q, kv, kv, new int[] {0}, 1, 1, 8, NeuralOps.NO_WINDOW, 0f, 0f, out));
        assertTrue(e.getMessage().contains("scale"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class,
                () -> ops.attention(q, kv, kv, new int[] {0}, 1, 1, 8, NeuralOps.NO_WINDOW, 0.5f, -1f, out));
        assertTrue(e.getMessage().contains("soft cap"), e.getMessage());
    }
}
