package io.graphlane.backend.cpu.nn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.graphlane.checkpoint.gguf.GgmlType;
import io.graphlane.checkpoint.recipe.HalfPrecision;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Random;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The Q4_K matrix read in place: its rows widen to ggml's decoded values bit for bit, and its projections (SIMD and
 * scalar, one input row and several, one and two threads, decode and prefill row counts) equal a double-precision
 * product of those decoded values to F32 rounding.
 */
@Tag("simd-kernels")
class KQuantKernelsTest {

    /** {@code rows} rows of random Q4_K blocks with scales and mins of every 6-bit value and small F16 {@code d}, {@code dmin}. */
    static ByteBuffer randomQ4K(Random random, int rows, int cols) {
        int blocks = rows * cols / 256;
        ByteBuffer b = ByteBuffer.allocateDirect(blocks * 144).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < blocks; i++) {
            int at = i * 144;
            b.putShort(at, HalfPrecision.f32ToF16(0.001f + random.nextFloat() * 0.01f));
            b.putShort(at + 2, HalfPrecision.f32ToF16(random.nextFloat() * 0.01f));
            for (int j = 4; j < 144; j++) {
                b.put(at + j, (byte) random.nextInt(256));
            }
        }
        return b;
    }

    static float[] decoded(ByteBuffer q, int rows, int cols) {
        float[] out = new float[rows * cols];
        float[] block = new float[256];
        for (int i = 0; i < rows * cols / 256; i++) {
            GgmlType.Q4_K.decodeBlock(q, i * 144, block);
            System.arraycopy(block, 0, out, i * 256, 256);
        }
        return out;
    }

    @Test
    void rowsWidenToGgmlsDecodedValuesBitForBit() {
        int rows = 3;
        int cols = 512;
        ByteBuffer q = randomQ4K(new Random(5), rows, cols);
        PackedMatrix w = PackedMatrix.of(PackedMatrix.Encoding.Q4_K, q, rows, cols);
        assertEquals(288, PackedMatrix.rowBytes(PackedMatrix.Encoding.Q4_K, cols));
        float[] want = decoded(q, rows, cols);
        float[] row = new float[cols];
        for (int r = 0; r < rows; r++) {
            w.widenRow(r, row, 0);
            for (int c = 0; c < cols; c++) {
                assertEquals(Float.floatToIntBits(want[r * cols + c]), Float.floatToIntBits(row[c]), "row " + r + " col " + c);
            }
        }
    }

    @Test
    void refusesColumnsThatAreNotWholeBlocks() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> PackedMatrix.of(PackedMatrix.Encoding.Q4_K, ByteBuffer.allocate(72), 1, 128));
        assertEquals("a Q4_K matrix needs a column count that is a multiple of 256, got 128", e.getMessage());
    }

    @ParameterizedTest(name = "{0} x {1} weights, {2} input row(s), {3} thread(s), SIMD {4}")
    @CsvSource({"7, 256, 1, 1, true", "33, 768, 1, 2, true", "33, 512, 3, 2, true", "17, 1024, 8, 1, true",
        "9, 512, 40, 2, true", "7, 256, 1, 1, false", "33, 512, 3, 2, false"})
    void projectionEqualsADoublePrecisionProductOfTheDecodedValues(int m, int k, int n, int threads, boolean simd) {
        CpuNeuralBackend.setBlasThreads(threads);
        Random random = new Random(31L * m + k + n);
        ByteBuffer q = randomQ4K(random, m, k);
        float[] weights = decoded(q, m, k);
        float[] x = new float[n * k];
        for (int i = 0; i < x.length; i++) {
            x[i] = (float) random.nextGaussian();
        }
        CpuNeuralOps ops = new CpuNeuralOps();
        CpuTensor input = ops.fromHost(x, n, k);
        CpuTensor found = ops.allocate(n, m);
        try {
            PackedMatrix w = PackedMatrix.of(PackedMatrix.Encoding.Q4_K, q, m, k);
            new PackedLinear(simd).linear(input, w, found, CpuNeuralOps.KERNEL_ROWS);
            for (int r = 0; r < n; r++) {
                for (int c = 0; c < m; c++) {
                    double e = 0;
                    double magnitude = 0;
                    for (int i = 0; i < k; i++) {
                        e += (double) weights[c * k + i] * x[r * k + i];
                        magnitude += Math.abs((double) weights[c * k + i] * x[r * k + i]);
                    }
                    assertEquals(e, found.get(r, c), 1e-5 * (1 + magnitude), "row " + r + " col " + c);
                }
            }
        } finally {
            ops.release(input);
            ops.release(found);
        }
    }
}
