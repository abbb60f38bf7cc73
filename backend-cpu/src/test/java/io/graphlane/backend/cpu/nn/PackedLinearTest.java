package io.graphlane.backend.cpu.nn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.checkpoint.recipe.BlockQ8;
import io.graphlane.core.GraphlaneException;
import io.graphlane.checkpoint.recipe.HalfPrecision;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Random;
import jdk.incubator.vector.FloatVector;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Projections over packed weights: for every encoding, row count (one row, a few, many) and thread count,
 * {@code linear} (SIMD and scalar kernels alike) equals the F32 product with the same weights widened, to F32
 * rounding. Tagged {@code simd-kernels}: the build runs it once more with 256-bit vectors.
 */
@Tag("simd-kernels")
class PackedLinearTest {

    @Test
    void theKernelsRunAtTheConfiguredWidth() {
        String property = System.getProperty(CpuNeuralBackend.VECTOR_BITS_PROPERTY);
        int expected = property != null && !property.equals("auto") ? Integer.parseInt(property)
                : FloatVector.SPECIES_PREFERRED.vectorBitSize() >= 512 ? 512 : 256;
        assertEquals(expected, CpuNeuralBackend.simdBits(), "-D" + CpuNeuralBackend.VECTOR_BITS_PROPERTY + "=" + property);
    }

    @Test
    void theVectorWidthPropertyTakesAuto256Or512AndNamesItselfOtherwise() {
        assertEquals(512, CpuNeuralBackend.vectorBits(null, 512, true));
        assertEquals(256, CpuNeuralBackend.vectorBits("auto", 256, true));
        assertEquals(256, CpuNeuralBackend.vectorBits("auto", 128, true), "never narrower than 256 bits");
        assertEquals(256, CpuNeuralBackend.vectorBits(" 256 ", 512, true));
        assertEquals(512, CpuNeuralBackend.vectorBits("512", 256, true));
        GraphlaneException e = assertThrows(GraphlaneException.class, () -> CpuNeuralBackend.vectorBits("1024", 512, true));
        assertEquals("-Dgraphlane.cpu.vector-bits must be auto, 256 or 512, found '1024'", e.getMessage());
        assertEquals(512, CpuNeuralBackend.vectorBits("1024", 512, false), "the kernels' initializer falls back to auto");
    }

    /**
     * The F32 SIMD kernel (one row; several rows, two weight rows at a time) equals a double-precision product, with
     * column counts that leave a tail no vector covers and odd weight-row counts.
     */
    @ParameterizedTest(name = "F32: {0} x {1} weights, {2} input row(s), {3} thread(s)")
    @CsvSource({"96, 64, 1, 1", "33, 71, 1, 2", "257, 1024, 1, 2", "33, 71, 2, 1", "40, 96, 5, 2", "257, 136, 9, 2"})
    void f32ProjectionEqualsADoublePrecisionProduct(int m, int k, int n, int threads) {
        CpuNeuralBackend.setBlasThreads(threads);
        Random random = new Random(17L * m + k + n);
        float[] weights = gaussians(random, m * k, 0.1f);
        float[] x = gaussians(random, n * k, 1f);
        CpuNeuralOps ops = new CpuNeuralOps();
        CpuTensor input = ops.fromHost(x, n, k);
        CpuTensor w = ops.fromHost(weights, m, k);
        CpuTensor found = ops.allocate(n, m);
        try {
            new PackedLinear(true).linearF32(input, w, found);
            for (int r = 0; r < n; r++) {
                for (int c = 0; c < m; c++) {
                    double e = 0;
                    for (int i = 0; i < k; i++) {
                        e += (double) weights[c * k + i] * x[r * k + i];
                    }
                    assertEquals(e, found.get(r, c), 1e-4 * (1 + Math.abs(e)), "row " + r + " col " + c);
                }
            }
        } finally {
            ops.release(input);
            ops.release(w);
            ops.release(found);
        }
    }

    @AfterEach
    void restoreThreads() {
        CpuNeuralBackend.setBlasThreads(1);
    }

    @ParameterizedTest(name = "{0}: {1} x {2} weights, {3} input row(s), {4} thread(s)")
    @CsvSource({
        "BF16, 96, 64, 1, 1", "BF16, 96, 64, 1, 2", "BF16, 33, 71, 3, 2", "BF16, 257, 1024, 1, 2", "BF16, 40, 96, 9, 1",
        "F16, 96, 64, 1, 1", "F16, 257, 1024, 2, 2", "F16, 40, 96, 9, 2",
        "Q8_0, 96, 64, 1, 1", "Q8_0, 257, 1024, 1, 2", "Q8_0, 33, 96, 5, 2", "Q8_0, 40, 96, 12, 1",
        "Q8_0, 35, 96, 1, 1", "Q8_0, 35, 160, 2, 2", "BF16, 35, 200, 2, 2", "Q8_0, 70, 64, 8, 2", "Q8_0, 33, 64, 3, 1",
        "BF16, 35, 200, 8, 2", "BF16, 19, 200, 6, 1", "BF16, 19, 64, 13, 2"})
    void packedProjectionEqualsTheWidenedF32Projection(PackedMatrix.Encoding encoding, int m, int k, int n, int threads) {
        CpuNeuralBackend.setBlasThreads(threads);
        Random random = new Random(31L * m + k + n);
        float[] weights = gaussians(random, m * k, 0.1f);
        float[] x = gaussians(random, n * k, 1f);
        PackedMatrix packed = pack(encoding, weights, m, k);
        float[] widened = new float[m * k];
        for (int r = 0; r < m; r++) {
            packed.widenRow(r, widened, r * k);
        }
        CpuNeuralOps ops = new CpuNeuralOps();
        CpuTensor input = ops.fromHost(x, n, k);
        CpuTensor expected = ops.allocate(n, m);
        CpuTensor found = ops.allocate(n, m);
        CpuTensor scalar = ops.allocate(n, m);
        CpuTensor f32 = ops.fromHost(widened, m, k);
        try {
            assertTrue(PackedKernels.VECTOR, "the tests run with --add-modules jdk.incubator.vector, so the SIMD kernels are checked");
            ops.linear(input, f32, expected);
            ops.linear(input, CpuTensor.wrapPacked(packed), found);
            new PackedLinear(false).linear(input, packed, scalar, CpuNeuralOps.GEMV_ROWS);
            for (int r = 0; r < n; r++) {
                for (int c = 0; c < m; c++) {
                    float e = expected.get(r, c);
                    assertEquals(e, found.get(r, c), 1e-4f * (1 + Math.abs(e)), encoding + " row " + r + " col " + c);
                    assertEquals(e, scalar.get(r, c), 1e-4f * (1 + Math.abs(e)), encoding + " scalar kernel, row " + r + " col " + c);
                }
            }
            if (encoding != PackedMatrix.Encoding.Q8_0) {
                // 16-bit widening is exact: the widened weights are the rounded originals
                for (int i = 0; i < weights.length; i++) {
                    float rounded = encoding == PackedMatrix.Encoding.BF16 ? HalfPrecision.bf16ToF32(HalfPrecision.f32ToBf16(weights[i]))
                            : HalfPrecision.f16ToF32(HalfPrecision.f32ToF16(weights[i]));
                    assertEquals(rounded, widened[i], encoding + " weight " + i);
                }
            } else {
                float worst = 0;
                for (int i = 0; i < weights.length; i++) {
                    worst = Math.max(worst, Math.abs(weights[i] - widened[i]));
                }
                float max = 0;
                for (float w : weights) {
                    max = Math.max(max, Math.abs(w));
                }
                assertTrue(worst <= max / 127f / 2 * 1.0001f, "8-bit error " + worst + " is within half a step of the largest scale");
            }
        } finally {
            ops.release(input);
            ops.release(expected);
            ops.release(found);
            ops.release(scalar);
            ops.release(f32);
        }
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource({"BF16", "Q8_0"})
    void embeddingRowsOfAPackedTableAreTheWidenedRows(PackedMatrix.Encoding encoding) {
        int vocab = 10;
        int dim = 64;
        float[] table = new float[vocab * dim];
        for (int i = 0; i < table.length; i++) {
            table[i] = (i % 17) * 0.25f - 2f;
        }
        PackedMatrix packed = pack(encoding, table, vocab, dim);
        CpuNeuralOps ops = new CpuNeuralOps();
        CpuTensor out = ops.allocate(2, dim);
        try {
            ops.embedding(CpuTensor.wrapPacked(packed), new int[] {7, 2}, out);
            float[] row = new float[dim];
            packed.widenRow(7, row, 0);
            for (int i = 0; i < dim; i++) {
                assertEquals(row[i], out.get(0, i));
                assertEquals(table[7 * dim + i], out.get(0, i), 2f / 127f);
            }
        } finally {
            ops.release(out);
        }
    }

    /**
     * Projections of one input through several weights in one pass of the threads equal each projection on its own, for
     * F32 and the SIMD encodings, with rows that split in uneven chunks across the matrices' boundaries; mixed
     * encodings and many rows take the one-by-one path and give the same.
     */
    @ParameterizedTest(name = "{0} and {1}: {2} input row(s), {3} thread(s)")
    @CsvSource({"F32, F32, 1, 2", "F32, F32, 13, 2", "BF16, BF16, 1, 2", "BF16, BF16, 6, 2", "Q8_0, Q8_0, 1, 2", "Q8_0, Q8_0, 5, 1",
        "BF16, Q8_0, 3, 2", "F32, BF16, 2, 2", "BF16, BF16, 20, 2"})
    void projectionsThatShareTheirInputEqualEachProjection(String first, String second, int n, int threads) {
        CpuNeuralBackend.setBlasThreads(threads);
        int k = 96;
        int[] rows = {131, 35, 35};
        String[] encodings = {first, second, second};
        Random random = new Random(7L * n + threads);
        CpuNeuralOps ops = new CpuNeuralOps();
        float[] x = gaussians(random, n * k, 1f);
        CpuTensor input = ops.fromHost(x, n, k);
        CpuTensor[] weights = new CpuTensor[rows.length];
        CpuTensor[] together = new CpuTensor[rows.length];
        CpuTensor[] alone = new CpuTensor[rows.length];
        for (int i = 0; i < rows.length; i++) {
            float[] w = new float[rows[i] * k];
            for (int j = 0; j < w.length; j++) {
                w[j] = (float) random.nextGaussian() * 0.1f;
            }
            weights[i] = encodings[i].equals("F32") ? ops.fromHost(w, rows[i], k)
                    : CpuTensor.wrapPacked(pack(PackedMatrix.Encoding.valueOf(encodings[i]), w, rows[i], k));
            together[i] = ops.allocate(n, rows[i]);
            alone[i] = ops.allocate(n, rows[i]);
        }
        ops.linearAll(input, weights, together);
        for (int i = 0; i < rows.length; i++) {
            ops.linear(input, weights[i], alone[i]);
            for (int r = 0; r < n; r++) {
                for (int c = 0; c < rows[i]; c++) {
                    float e = alone[i].get(r, c);
                    assertEquals(e, together[i].get(r, c), 1e-5f * (1 + Math.abs(e)), "matrix " + i + " row " + r + " col " + c);
                }
            }
        }
        assertThrows(io.graphlane.core.nn.ShapeMismatchException.class,
                () -> ops.linearAll(input, new CpuTensor[] {weights[0]}, new CpuTensor[] {alone[1]}));
    }

    @org.junit.jupiter.api.Test
    void aPackedTensorHasNoF32View() {
        CpuTensor packed = CpuTensor.wrapPacked(pack(PackedMatrix.Encoding.BF16, new float[64], 1, 64));
        IllegalStateException e = assertThrows(IllegalStateException.class, packed::data);
        assertTrue(e.getMessage().contains("BF16[1, 64]"), e.getMessage());
    }

    @org.junit.jupiter.api.Test
    void aBufferOfTheWrongSizeIsRefusedNamingBothSizes() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> PackedMatrix.of(PackedMatrix.Encoding.Q8_0, ByteBuffer.allocateDirect(100), 2, 64));
        assertTrue(e.getMessage().contains("needs 144 bytes") && e.getMessage().contains("holds 100"), e.getMessage());
    }

    /** {@code values} ({@code rows × cols}) in {@code encoding}, in a direct buffer. */
    static PackedMatrix pack(PackedMatrix.Encoding encoding, float[] values, int rows, int cols) {
        ByteBuffer bytes = ByteBuffer.allocateDirect((int) (rows * PackedMatrix.rowBytes(encoding, cols))).order(ByteOrder.LITTLE_ENDIAN);
        switch (encoding) {
            case BF16 -> {
                for (int i = 0; i < values.length; i++) {
                    bytes.putShort(2 * i, HalfPrecision.f32ToBf16(values[i]));
                }
            }
            case F16 -> {
                for (int i = 0; i < values.length; i++) {
                    bytes.putShort(2 * i, HalfPrecision.f32ToF16(values[i]));
                }
            }
            case Q8_0 -> {
                ByteBuffer f32 = ByteBuffer.allocate(values.length * Float.BYTES).order(ByteOrder.LITTLE_ENDIAN);
                f32.asFloatBuffer().put(values);
                BlockQ8.quantize(f32, rows, cols, bytes);
            }
        }
        return PackedMatrix.of(encoding, bytes, rows, cols);
    }

    /** {@code count} draws of a normal distribution of standard deviation {@code scale}. */
    private static float[] gaussians(Random random, int count, float scale) {
        float[] values = new float[count];
        for (int i = 0; i < count; i++) {
            values[i] = (float) random.nextGaussian() * scale;
        }
        return values;
    }
}
