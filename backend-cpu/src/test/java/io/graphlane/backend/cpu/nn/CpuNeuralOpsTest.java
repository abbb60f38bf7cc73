package io.graphlane.backend.cpu.nn;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.core.GraphlaneException;
import io.graphlane.core.nn.ShapeMismatchException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Each CPU neural op against a straightforward loop over Java arrays, on small random tensors. */
class CpuNeuralOpsTest {
    private static final float TOLERANCE = 1e-5f;

    private final CpuNeuralOps ops = new CpuNeuralOps();
    private final Random random = new Random(42);

    @Test
    void linearOnManyRowsMatchesTheTripleLoop() {
        checkLinear(CpuNeuralOps.GEMV_ROWS + 13, 33, 19);
    }

    @Test
    void linearOnAFewRowsMatchesTheTripleLoop() {
        checkLinear(CpuNeuralOps.GEMV_ROWS - 1, 33, 19);
    }

    /** Every row count the SIMD kernels take (one, and several: weight rows in pairs, an odd one last), odd and whole widths. */
    @Test
    void linearOnEveryKernelRowCountMatchesTheTripleLoop() {
        for (int n = 1; n < CpuNeuralOps.KERNEL_ROWS; n++) {
            checkLinear(n, 33, 19);
            checkLinear(n, 64, 20);
        }
    }

    @Test
    void blasThreadsShareTheCoresAmongTheLanesThatCallAtOnceUnlessOverridden() {
        assertEquals(2, CpuNeuralBackend.blasThreadsFor(1, 2, 0), "a lone stage uses every core");
        assertEquals(1, CpuNeuralBackend.blasThreadsFor(2, 2, 0), "as many lanes as cores: one thread each");
        assertEquals(1, CpuNeuralBackend.blasThreadsFor(8, 2, 0), "more lanes than cores never oversubscribe");
        assertEquals(4, CpuNeuralBackend.blasThreadsFor(4, 16, 0));
        assertEquals(3, CpuNeuralBackend.blasThreadsFor(1, 16, 3), "the override wins");
        assertThrows(IllegalArgumentException.class, () -> CpuNeuralBackend.blasThreadsFor(0, 2, 0));
    }

    @Test
    void theBlasThreadsPropertyTakesAutoOrAPositiveNumberAndNamesItselfOtherwise() {
        String before = System.getProperty(CpuNeuralBackend.BLAS_THREADS_PROPERTY);
        try {
            System.clearProperty(CpuNeuralBackend.BLAS_THREADS_PROPERTY);
            assertEquals(0, CpuNeuralBackend.blasThreadsOverride());
            System.setProperty(CpuNeuralBackend.BLAS_THREADS_PROPERTY, "auto");
            assertEquals(0, CpuNeuralBackend.blasThreadsOverride());
            System.setProperty(CpuNeuralBackend.BLAS_THREADS_PROPERTY, "3");
            assertEquals(3, CpuNeuralBackend.blasThreadsOverride());
            System.setProperty(CpuNeuralBackend.BLAS_THREADS_PROPERTY, "0");
            GraphlaneException e = assertThrows(GraphlaneException.class, CpuNeuralBackend::blasThreadsOverride);
            assertEquals("-Dgraphlane.cpu.blas-threads must be auto or a whole number >= 1, found '0'", e.getMessage());
        } finally {
            if (before == null) {
                System.clearProperty(CpuNeuralBackend.BLAS_THREADS_PROPERTY);
            } else {
                System.setProperty(CpuNeuralBackend.BLAS_THREADS_PROPERTY, before);
            }
        }
    }

    @Test
    void theWeightStreamProbeRunsTheDecodeKernelOverAMatrixOfTheGivenSize() {
        WeightStreamProbe probe = new WeightStreamProbe(3L * WeightStreamProbe.COLUMNS * Float.BYTES);
        assertEquals(3L * WeightStreamProbe.COLUMNS * Float.BYTES, probe.bytes());
        assertTrue(probe.bestSeconds(1, 2) > 0);
        assertTrue(probe.bestSeconds(CpuNeuralOps.GEMV_ROWS + 1, 1) > 0, "the sgemm path too");
        assertTrue(probe.bestKernelSeconds(1, 1) > 0 && probe.bestBlasSeconds(1, 1) > 0, "each kernel alone");
        assertThrows(IllegalArgumentException.class, () -> probe.bestKernelSeconds(1, 0));
        assertThrows(IllegalArgumentException.class, () -> new WeightStreamProbe(0));
    }

    @Test
    void blasThreadsCanBeSetProcessWide() {
        int before = CpuNeuralBackend.blasThreads();
        int restore = before > 0 ? before : Runtime.getRuntime().availableProcessors();
        try {
            CpuNeuralBackend.setBlasThreads(1);
            assertEquals(1, CpuNeuralBackend.blasThreads());
            checkLinear(CpuNeuralOps.GEMV_ROWS + 3, 40, 24);
        } finally {
            CpuNeuralBackend.setBlasThreads(restore);
        }
        assertThrows(IllegalArgumentException.class, () -> CpuNeuralBackend.setBlasThreads(0));
    }

    @Test
    void theBackendHandsOutOneOpsInstancePerLane() {
        try (io.graphlane.backend.cpu.CpuBackend device = new io.graphlane.backend.cpu.CpuBackend()) {
            CpuNeuralBackend backend = new CpuNeuralBackend();
            var lanes = device.forkExecutors(device.rootExecutor(), 2);
            assertTrue(backend.ops(lanes.get(0)) == backend.ops(lanes.get(0)));
            assertTrue(backend.ops(lanes.get(0)) != backend.ops(lanes.get(1)));
        }
    }

    @Test
    void linearOnOneRowMatchesTheTripleLoop() {
        checkLinear(1, 64, 48);
    }

    @Test
    void linearReadsAndWritesRowSlicesAtTheirOffset() {
        int many = CpuNeuralOps.GEMV_ROWS + 2;
        int n = many + 8, k = 8, m = 5;
        float[] x = randoms(n * k);
        float[] w = randoms(m * k);
        CpuTensor xs = ops.fromHost(x, n, k);
        CpuTensor weight = ops.fromHost(w, m, k);
        CpuTensor out = ops.allocate(n, m);
        ops.linear(ops.rowSlice(xs, 2, 2 + many), weight, ops.rowSlice(out, 1, 1 + many));      // sgemm path
        ops.linear(ops.rowSlice(xs, n - 3, n), weight, ops.rowSlice(out, n - 4, n - 1));        // gemv path
        float[] expected = Reference.linear(x, n, k, w, m);
        float[] found = host(out);
        for (int r = 0; r < n; r++) {
            for (int c = 0; c < m; c++) {
                float want;
                if (r >= 1 && r < 1 + many) {
                    want = expected[(r + 1) * m + c];
                } else if (r >= n - 4 && r < n - 1) {
                    want = expected[(r + 1) * m + c];
                } else {
                    want = 0f;
                }
                assertEquals(want, found[r * m + c], TOLERANCE, "row " + r + " col " + c);
            }
        }
    }

    @Test
    void addBiasAddsToEveryRow() {
        float[] x = randoms(3 * 4);
        float[] b = randoms(4);
        CpuTensor t = ops.fromHost(x, 3, 4);
        ops.addBias(t, ops.fromHost(b, 1, 4));
        float[] found = host(t);
        for (int i = 0; i < x.length; i++) {
            assertEquals(x[i] + b[i % 4], found[i], 0f);
        }
    }

    @Test
    void rmsNormMatchesTheFormula() {
        int n = 3, d = 16;
        float[] x = randoms(n * d);
        float[] w = randoms(d);
        CpuTensor out = ops.allocate(n, d);
        ops.rmsNorm(ops.fromHost(x, n, d), ops.fromHost(w, 1, d), 1e-5f, out);
        assertArrayEquals(Reference.rmsNorm(x, n, d, w, 1e-5f), host(out), TOLERANCE);
    }

    @Test
    void rmsNormMayWriteInPlace() {
        float[] x = randoms(2 * 8);
        float[] w = randoms(8);
        CpuTensor t = ops.fromHost(x, 2, 8);
        ops.rmsNorm(t, ops.fromHost(w, 1, 8), 1e-6f, t);
        assertArrayEquals(Reference.rmsNorm(x, 2, 8, w, 1e-6f), host(t), TOLERANCE);
    }

    @Test
    void ropeRotatesHalvesPerHeadLikeHuggingFace() {
        int heads = 3, headDim = 8;
        int[] positions = {0, 1, 5, 17};
        float[] x = randoms(positions.length * heads * headDim);
        CpuTensor t = ops.fromHost(x, positions.length, heads * headDim);
        ops.rope(t, positions, headDim, 10000f);
        assertArrayEquals(Reference.rope(x, positions, heads, headDim, 10000.0), host(t), TOLERANCE);
    }

    @Test
    void ropeAtPositionZeroIsTheIdentityAndPreservesPairNorms() {
        int headDim = 16;
        float[] x = randoms(2 * headDim);
        CpuTensor t = ops.fromHost(x, 2, headDim);
        ops.rope(t, new int[] {0, 9}, headDim, 500000f);
        float[] found = host(t);
        for (int i = 0; i < headDim; i++) {
            assertEquals(x[i], found[i], 0f, "position 0 must not rotate");
        }
        for (int i = 0; i < headDim / 2; i++) {
            double before = Math.hypot(x[headDim + i], x[headDim + i + headDim / 2]);
            double after = Math.hypot(found[headDim + i], found[headDim + i + headDim / 2]);
            assertEquals(before, after, 1e-5, "pair (" + i + ", " + (i + headDim / 2) + ") changed its length");
        }
    }

    @Test
    void groupedQueryAttentionMatchesTheNaiveComputation() {
        int heads = 4, kvHeads = 2, headDim = 8, cacheRows = 10;
        int[] positions = {3, 4, 5, 9};
        float[] q = randoms(positions.length * heads * headDim);
        float[] k = randoms(cacheRows * kvHeads * headDim);
        float[] v = randoms(cacheRows * kvHeads * headDim);
        CpuTensor out = ops.allocate(positions.length, heads * headDim);
        ops.attention(ops.fromHost(q, positions.length, heads * headDim), ops.fromHost(k, cacheRows, kvHeads * headDim),
                ops.fromHost(v, cacheRows, kvHeads * headDim), positions, heads, kvHeads, headDim, out);
        assertArrayEquals(Reference.attention(q, k, v, positions, heads, kvHeads, headDim), host(out), TOLERANCE);
    }

    @Tag("simd-kernels")
    @Test
    void attentionSplitOverTwoThreadsMatchesTheNaiveComputation() {
        // long enough that each (row, head) unit reads well over RowParallel's minimum part, so the units are split
        int heads = 8, kvHeads = 4, headDim = 64, cacheRows = 700;
        int[] positions = {699, 350, 17, 698, 0};
        float[] q = randoms(positions.length * heads * headDim);
        float[] k = randoms(cacheRows * kvHeads * headDim);
        float[] v = randoms(cacheRows * kvHeads * headDim);
        int before = CpuNeuralBackend.blasThreads();
        int restore = before > 0 ? before : Runtime.getRuntime().availableProcessors();
        try {
            CpuNeuralBackend.setBlasThreads(2);
            CpuTensor out = ops.allocate(positions.length, heads * headDim);
            ops.attention(ops.fromHost(q, positions.length, heads * headDim), ops.fromHost(k, cacheRows, kvHeads * headDim),
                    ops.fromHost(v, cacheRows, kvHeads * headDim), positions, heads, kvHeads, headDim, out);
            assertArrayEquals(Reference.attention(q, k, v, positions, heads, kvHeads, headDim), host(out), TOLERANCE);
        } finally {
            CpuNeuralBackend.setBlasThreads(restore);
        }
    }

    @Tag("simd-kernels")
    @Test
    void attentionNeverReadsCacheRowsPastTheQueryPosition() {
        int heads = 2, kvHeads = 1, headDim = 4, cacheRows = 8;
        float[] q = randoms(heads * headDim);
        float[] k = randoms(cacheRows * headDim);
        float[] v = randoms(cacheRows * headDim);
        CpuTensor first = ops.allocate(1, heads * headDim);
        ops.attention(ops.fromHost(q, 1, heads * headDim), ops.fromHost(k, cacheRows, headDim), ops.fromHost(v, cacheRows, headDim),
                new int[] {2}, heads, kvHeads, headDim, first);
        for (int i = 3 * headDim; i < k.length; i++) {
            k[i] = 1000f;
            v[i] = -1000f;
        }
        CpuTensor second = ops.allocate(1, heads * headDim);
        ops.attention(ops.fromHost(q, 1, heads * headDim), ops.fromHost(k, cacheRows, headDim), ops.fromHost(v, cacheRows, headDim),
                new int[] {2}, heads, kvHeads, headDim, second);
        assertArrayEquals(host(first), host(second), 0f);
    }

    /**
     * A sliding window of 1, 3, and more positions than the sequence, against the naive masked attention: a prefill of
     * rows at positions 0..7, then decode steps one row at a time up to position 15, well past the window, each through
     * the Vector API kernels and through OpenBLAS. Both read the full cache, its rows before the window included.
     */
    @ParameterizedTest
    @ValueSource(ints = {1, 3, 5, 16, 1000, Integer.MAX_VALUE})
    void slidingWindowAttentionMatchesTheNaiveMaskedComputation(int window) {
        int heads = 4, kvHeads = 2, headDim = 8, cacheRows = 16;
        float[] k = randoms(cacheRows * kvHeads * headDim);
        float[] v = randoms(cacheRows * kvHeads * headDim);
        CpuTensor keys = ops.fromHost(k, cacheRows, kvHeads * headDim);
        CpuTensor values = ops.fromHost(v, cacheRows, kvHeads * headDim);
        List<int[]> steps = new ArrayList<>();
        steps.add(new int[] {0, 1, 2, 3, 4, 5, 6, 7});
        for (int p = 8; p < cacheRows; p++) {
            steps.add(new int[] {p});
        }
        for (int[] positions : steps) {
            float[] q = randoms(positions.length * heads * headDim);
            float[] expected = Reference.attention(q, k, v, positions, heads, kvHeads, headDim, window);
            CpuTensor query = ops.fromHost(q, positions.length, heads * headDim);
            CpuTensor out = ops.allocate(positions.length, heads * headDim);
            ops.attention(query, keys, values, positions, heads, kvHeads, headDim, window, out);
            assertArrayEquals(expected, host(out), TOLERANCE, "window " + window + " at " + Arrays.toString(positions));
            CpuTensor blas = ops.allocate(positions.length, heads * headDim);
            ops.blasAttention(query, keys, values, positions, heads, kvHeads, headDim, window, blas);
            assertArrayEquals(expected, host(blas), TOLERANCE, "OpenBLAS, window " + window + " at " + Arrays.toString(positions));
        }
    }

    @Test
    void aWindowOfOnePositionReturnsTheQuerysOwnValues() {
        int heads = 2, kvHeads = 1, headDim = 4, cacheRows = 6;
        float[] k = randoms(cacheRows * headDim);
        float[] v = randoms(cacheRows * headDim);
        CpuTensor out = ops.allocate(2, heads * headDim);
        ops.attention(ops.fromHost(randoms(2 * heads * headDim), 2, heads * headDim), ops.fromHost(k, cacheRows, headDim),
                ops.fromHost(v, cacheRows, headDim), new int[] {0, 5}, heads, kvHeads, headDim, 1, out);
        float[] found = host(out);
        for (int h = 0; h < heads; h++) {
            for (int d = 0; d < headDim; d++) {
                assertEquals(v[d], found[h * headDim + d], 1e-6f, "row at position 0, head " + h);
                assertEquals(v[5 * headDim + d], found[heads * headDim + h * headDim + d], 1e-6f, "row at position 5, head " + h);
            }
        }
    }

    @Tag("simd-kernels")
    @Test
    void aSlidingWindowSplitOverTwoThreadsNeverReadsRowsBeforeIt() {
        int heads = 8, kvHeads = 4, headDim = 64, cacheRows = 700, window = 300;
        int[] positions = {699, 350, 17, 698, 0};
        float[] q = randoms(positions.length * heads * headDim);
        float[] k = randoms(cacheRows * kvHeads * headDim);
        float[] v = randoms(cacheRows * kvHeads * headDim);
        float[] expected = Reference.attention(q, k, v, positions, heads, kvHeads, headDim, window);
        // rows no query's window reaches (before 699 - 300 + 1, except those the rows at 17 and 0 see) poisoned
        for (int i = 18 * kvHeads * headDim; i < 51 * kvHeads * headDim; i++) {
            k[i] = Float.NaN;
            v[i] = Float.NaN;
        }
        int before = CpuNeuralBackend.blasThreads();
        int restore = before > 0 ? before : Runtime.getRuntime().availableProcessors();
        try {
            CpuNeuralBackend.setBlasThreads(2);
            CpuTensor out = ops.allocate(positions.length, heads * headDim);
            ops.attention(ops.fromHost(q, positions.length, heads * headDim), ops.fromHost(k, cacheRows, kvHeads * headDim),
                    ops.fromHost(v, cacheRows, kvHeads * headDim), positions, heads, kvHeads, headDim, window, out);
            assertArrayEquals(expected, host(out), TOLERANCE);
        } finally {
            CpuNeuralBackend.setBlasThreads(restore);
        }
    }

    @Test
    void attentionRefusesAWindowOfNoPosition() {
        CpuTensor q = ops.allocate(1, 4);
        CpuTensor cache = ops.allocate(3, 4);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> ops.attention(q, cache, cache, new int[] {2}, 1, 1, 4, 0, ops.allocate(1, 4)));
        assertTrue(e.getMessage().contains("window") && e.getMessage().contains("0"), e.getMessage());
    }

    @Test
    void attentionRefusesAPositionOutsideTheCache() {
        CpuTensor q = ops.allocate(1, 4);
        CpuTensor cache = ops.allocate(3, 4);
        IndexOutOfBoundsException e = assertThrows(IndexOutOfBoundsException.class,
                () -> ops.attention(q, cache, cache, new int[] {3}, 1, 1, 4, ops.allocate(1, 4)));
        assertTrue(e.getMessage().contains("position 3"), e.getMessage());
    }

    @Test
    void siluMulAddAndSoftmaxMatchTheirFormulas() {
        float[] a = randoms(12);
        float[] b = randoms(12);
        CpuTensor out = ops.allocate(3, 4);
        ops.siluMul(ops.fromHost(a, 3, 4), ops.fromHost(b, 3, 4), out);
        float[] silu = host(out);
        for (int i = 0; i < a.length; i++) {
            assertEquals(a[i] / (1 + Math.exp(-a[i])) * b[i], silu[i], 1e-6);
        }
        CpuTensor sum = ops.fromHost(a, 3, 4);
        ops.add(sum, ops.fromHost(b, 3, 4), sum);
        float[] sums = host(sum);
        for (int i = 0; i < a.length; i++) {
            assertEquals(a[i] + b[i], sums[i], 0f);
        }
        CpuTensor probabilities = ops.fromHost(a, 3, 4);
        ops.softmax(probabilities);
        float[] p = host(probabilities);
        for (int r = 0; r < 3; r++) {
            double total = 0;
            double norm = 0;
            for (int i = 0; i < 4; i++) {
                norm += Math.exp(a[r * 4 + i]);
            }
            for (int i = 0; i < 4; i++) {
                assertEquals(Math.exp(a[r * 4 + i]) / norm, p[r * 4 + i], 1e-6);
                total += p[r * 4 + i];
            }
            assertEquals(1.0, total, 1e-6);
        }
    }

    @Test
    void argmaxTakesTheFirstLargestValuePerRow() {
        CpuTensor t = ops.fromHost(new float[] {1, 5, 5, 2, -3, -1, -1, -7}, 2, 4);
        assertArrayEquals(new int[] {1, 1}, ops.argmax(t));
    }

    @Test
    void embeddingGathersRowsAndNamesAnIdOutsideTheVocabulary() {
        float[] table = randoms(5 * 3);
        CpuTensor out = ops.allocate(3, 3);
        ops.embedding(ops.fromHost(table, 5, 3), new int[] {4, 0, 4}, out);
        float[] found = host(out);
        for (int c = 0; c < 3; c++) {
            assertEquals(table[4 * 3 + c], found[c], 0f);
            assertEquals(table[c], found[3 + c], 0f);
            assertEquals(table[4 * 3 + c], found[6 + c], 0f);
        }
        IndexOutOfBoundsException e = assertThrows(IndexOutOfBoundsException.class,
                () -> ops.embedding(ops.fromHost(table, 5, 3), new int[] {1, 5}, ops.allocate(2, 3)));
        assertTrue(e.getMessage().contains("token id 5 at position 1"), e.getMessage());
    }

    @Test
    void aShapeMismatchNamesTheOperationAndOperand() {
        ShapeMismatchException e = assertThrows(ShapeMismatchException.class,
                () -> ops.linear(ops.allocate(2, 4), ops.allocate(3, 5), ops.allocate(2, 3)));
        assertTrue(e.getMessage().startsWith("linear: operand weight"), e.getMessage());
        assertTrue(e.getMessage().contains("= 4") && e.getMessage().contains("= 5"), e.getMessage());
    }

    @Test
    void aTensorIsReleasedExactlyOnceAndRefusedAfterwards() {
        CpuTensor t = ops.allocate(2, 2);
        CpuTensor view = ops.rowSlice(t, 0, 1);
        assertThrows(IllegalStateException.class, () -> ops.release(view));
        ops.release(t);
        assertTrue(view.isReleased());
        assertThrows(IllegalStateException.class, () -> ops.release(t));
        assertThrows(IllegalStateException.class, () -> ops.argmax(t));
        assertThrows(IllegalStateException.class, () -> ops.argmax(view));
    }

    @Test
    void wrapRefusesHeapBuffersAndWrongLengths() {
        assertThrows(IllegalArgumentException.class, () -> CpuTensor.wrap(FloatBuffer.allocate(4), 2, 2));
        FloatBuffer direct = ByteBuffer.allocateDirect(16).order(ByteOrder.nativeOrder()).asFloatBuffer();
        assertThrows(IllegalArgumentException.class, () -> CpuTensor.wrap(direct, 3, 2));
        CpuTensor wrapped = CpuTensor.wrap(direct, 2, 2);
        assertThrows(IllegalStateException.class, () -> ops.release(wrapped));
    }

    @Test
    void fromBufferCopiesLittleEndianBytesFromTheirPosition() {
        ByteBuffer bytes = ByteBuffer.allocateDirect(5 * 4).order(ByteOrder.LITTLE_ENDIAN);
        bytes.asFloatBuffer().put(new float[] {9, 1, 2, 3, 4});
        FloatBuffer floats = bytes.asFloatBuffer();
        floats.position(1);
        CpuTensor t = ops.fromBuffer(floats, 2, 2);
        assertArrayEquals(new float[] {1, 2, 3, 4}, host(t), 0f);
        assertEquals(1, floats.position(), "the source buffer is not consumed");
        assertThrows(ShapeMismatchException.class, () -> ops.fromBuffer(floats, 2, 3));
    }

    @Test
    void allocatedTensorsStartAtZero() {
        assertArrayEquals(new float[6], host(ops.allocate(2, 3)), 0f);
    }

    private void checkLinear(int n, int k, int m) {
        float[] x = randoms(n * k);
        float[] w = randoms(m * k);
        CpuTensor out = ops.allocate(n, m);
        ops.linear(ops.fromHost(x, n, k), ops.fromHost(w, m, k), out);
        assertArrayEquals(Reference.linear(x, n, k, w, m), host(out), 1e-4f);
    }

    /**
     * The fused ops against the unfused composition they replace, and the attention over the cache against a
     * double-precision loop, on random shapes, several rows and row views at an offset into larger tensors.
     */
    @Nested
    class Fused {
        private static final int TRIALS = 40;

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

        @Tag("simd-kernels")
        @Test
        void attentionOverTheCacheMatchesTheNaiveComputationOnRandomShapesAndViews() {
            // head widths below, at and between multiples of both vector widths; groups of up to six query heads per
            // key/value head (the scores take four at a time)
            int[] headDims = {1, 2, 8, 16, 24, 40, 64, 80};
            for (int trial = 0; trial < TRIALS; trial++) {
                int kvHeads = 1 + random.nextInt(3);
                int heads = kvHeads * (1 + random.nextInt(6));
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
        void attentionKeepsItsScratchAndGrowsItOnlyForALongerCache() {
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
            // the Vector API kernel keeps its scores in a per-thread heap array; the OpenBLAS path in one native buffer
            assertEquals(PackedKernels.VECTOR ? warmed : warmed + 1, ops.allocationCount(),
                    "a longer cache grows the native scores buffer once, and only on the OpenBLAS path");
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
