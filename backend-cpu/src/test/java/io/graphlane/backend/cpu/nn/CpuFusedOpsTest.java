package io.graphlane.backend.cpu.nn;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The fused CPU ops against the unfused composition they replace, and the attention over the cache against a
 * double-precision loop, on random shapes, several rows and row views at an offset into larger tensors.
 */
class CpuFusedOpsTest {
    private static final int TRIALS = 40;

    private final CpuNeuralOps ops = new CpuNeuralOps();
    private final Random random = new Random(7);

    @Test
    void addRmsNormGivesTheSameBitsAsAddThenRmsNorm() {
        int[] widths = {1, 3, 8, 33, 64, 100};
        for (int trial = 0; trial < TRIALS; trial++) {
            int rows = 1 + random.nextInt(6);
            int cols = widths[random.nextInt(widths.length)];
            int offset = random.nextInt(3);
            float[] x = randoms((rows + offset) * cols);
            float[] residual = randoms((rows + offset) * cols);
            CpuTensor weight = ops.fromHost(randoms(cols), 1, cols);
            float eps = 1e-5f;

            CpuTensor fusedX = view(x, rows, cols, offset);
            CpuTensor fusedOut = view(new float[(rows + offset) * cols], rows, cols, offset);
            ops.addRmsNorm(fusedX, view(residual, rows, cols, offset), weight, eps, fusedOut);

            CpuTensor composedX = view(x, rows, cols, offset);
            CpuTensor composedOut = ops.allocate(rows, cols);
            ops.add(composedX, view(residual, rows, cols, offset), composedX);
            ops.rmsNorm(composedX, weight, eps, composedOut);

            String shape = "trial " + trial + ": " + rows + " x " + cols + " at row offset " + offset;
            assertArrayEquals(host(composedX), host(fusedX), 0f, "x + residual, " + shape);
            assertArrayEquals(host(composedOut), host(fusedOut), 0f, "the norm, " + shape);
        }
    }

    @Test
    void ropeOnQueriesAndKeysTogetherGivesTheSameBitsAsRopeOnEach() {
        int[] headDims = {2, 4, 8, 16, 64};
        for (int trial = 0; trial < TRIALS; trial++) {
            int headDim = headDims[random.nextInt(headDims.length)];
            int qHeads = 1 + random.nextInt(6);
            int kHeads = 1 + random.nextInt(qHeads);
            int rows = 1 + random.nextInt(5);
            int offset = random.nextInt(3);
            int[] positions = new int[rows];
            for (int r = 0; r < rows; r++) {
                positions[r] = random.nextInt(600);
            }
            float theta = random.nextBoolean() ? 10000f : 500000f;
            float[] q = randoms((rows + offset) * qHeads * headDim);
            float[] k = randoms((rows + offset) * kHeads * headDim);

            CpuTensor fusedQ = view(q, rows, qHeads * headDim, offset);
            CpuTensor fusedK = view(k, rows, kHeads * headDim, offset);
            ops.ropeQk(fusedQ, fusedK, positions, headDim, theta);
            CpuTensor q1 = view(q, rows, qHeads * headDim, offset);
            CpuTensor k1 = view(k, rows, kHeads * headDim, offset);
            ops.rope(q1, positions, headDim, theta);
            ops.rope(k1, positions, headDim, theta);

            String shape = "trial " + trial + ": " + rows + " rows at " + Arrays.toString(positions) + ", " + qHeads + "/" + kHeads
                    + " heads of " + headDim;
            assertArrayEquals(host(q1), host(fusedQ), 0f, "q, " + shape);
            assertArrayEquals(host(k1), host(fusedK), 0f, "k, " + shape);
        }
    }

    @Test
    void attentionOverTheCacheMatchesTheNaiveComputationOnRandomShapesAndViews() {
        int[] headDims = {1, 2, 8, 16, 64};
        for (int trial = 0; trial < TRIALS; trial++) {
            int kvHeads = 1 + random.nextInt(3);
            int heads = kvHeads * (1 + random.nextInt(4));
            int headDim = headDims[random.nextInt(headDims.length)];
            int cacheRows = 1 + random.nextInt(40);
            int capacity = cacheRows + random.nextInt(5);
            int rows = 1 + random.nextInt(5);
            int offset = random.nextInt(3);
            int[] positions = new int[rows];
            if (random.nextBoolean()) {
                // the rows of one request's prefill: consecutive positions ending anywhere in the cache
                int first = random.nextInt(Math.max(1, cacheRows - rows + 1));
                for (int r = 0; r < rows; r++) {
                    positions[r] = Math.min(cacheRows - 1, first + r);
                }
            } else {
                for (int r = 0; r < rows; r++) {
                    positions[r] = random.nextInt(cacheRows);
                }
            }
            int width = heads * headDim;
            int kvWidth = kvHeads * headDim;
            float[] q = randoms(rows * width);
            float[] k = randoms(cacheRows * kvWidth);
            float[] v = randoms(cacheRows * kvWidth);
            float[] qPadded = pad(q, offset * width);
            CpuTensor keys = ops.rowSlice(ops.fromHost(Arrays.copyOf(k, capacity * kvWidth), capacity, kvWidth), 0, cacheRows);
            CpuTensor values = ops.rowSlice(ops.fromHost(Arrays.copyOf(v, capacity * kvWidth), capacity, kvWidth), 0, cacheRows);
            CpuTensor whole = ops.fromHost(new float[(rows + offset + 1) * width], rows + offset + 1, width);
            ops.attention(view(qPadded, rows, width, offset), keys, values, positions, heads, kvHeads, headDim,
                    ops.rowSlice(whole, offset, offset + rows));

            float[] found = host(whole);
            String shape = "trial " + trial + ": " + heads + "/" + kvHeads + " heads of " + headDim + ", rows at " + Arrays.toString(positions)
                    + " over " + cacheRows + " cache rows";
            assertArrayEquals(Reference.attention(q, k, v, positions, heads, kvHeads, headDim),
                    Arrays.copyOfRange(found, offset * width, (offset + rows) * width), 1e-4f, shape);
            assertArrayEquals(new float[offset * width], Arrays.copyOfRange(found, 0, offset * width), 0f, "rows before the view, " + shape);
            assertArrayEquals(new float[width], Arrays.copyOfRange(found, (offset + rows) * width, found.length), 0f,
                    "the row after the view, " + shape);
        }
    }

    @Test
    void attentionKeepsItsScoresBufferAndGrowsItOnlyForALongerCache() {
        int heads = 6, kvHeads = 2, headDim = 8, cacheRows = 300;
        CpuTensor keys = ops.fromHost(randoms(cacheRows * kvHeads * headDim), cacheRows, kvHeads * headDim);
        CpuTensor values = ops.fromHost(randoms(cacheRows * kvHeads * headDim), cacheRows, kvHeads * headDim);
        CpuTensor q = ops.fromHost(randoms(heads * headDim), 1, heads * headDim);
        CpuTensor out = ops.allocate(1, heads * headDim);
        ops.attention(q, keys, values, new int[] {99}, heads, kvHeads, headDim, out);
        long warmed = ops.allocationCount();
        for (int position = 0; position < 100; position++) {
            ops.attention(q, keys, values, new int[] {position}, heads, kvHeads, headDim, out);
        }
        assertEquals(warmed, ops.allocationCount(), "attention over at most as many cache rows as before allocated");
        ops.attention(q, keys, values, new int[] {cacheRows - 1}, heads, kvHeads, headDim, out);
        assertEquals(warmed + 1, ops.allocationCount(), "a longer cache grows the scores buffer once");
    }

    /** A fresh tensor of {@code (rows + offset) × cols} holding {@code data}, viewed from row {@code offset} on for {@code rows} rows. */
    private CpuTensor view(float[] data, int rows, int cols, int offset) {
        float[] copy = Arrays.copyOf(data, (rows + offset) * cols);
        return ops.rowSlice(ops.fromHost(copy, rows + offset, cols), offset, offset + rows);
    }

    private static float[] pad(float[] data, int before) {
        float[] padded = new float[before + data.length];
        System.arraycopy(data, 0, padded, before, data.length);
        return padded;
    }

    private float[] host(CpuTensor t) {
        float[] out = new float[t.rows() * t.cols()];
        ops.toHost(t, out);
        return out;
    }

    private float[] randoms(int n) {
        float[] a = new float[n];
        for (int i = 0; i < n; i++) {
            a[i] = (float) random.nextGaussian();
        }
        return a;
    }
}
