package io.graphlane.backend.cpu.nn;

import io.graphlane.checkpoint.gguf.GgmlType;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;

/**
 * Projections of a {@link PackedMatrix.Encoding#Q4_K Q4_K} matrix read in place: GGUF's 4-bit K-quant blocks (256
 * values in 144 bytes, see {@link GgmlType}) are decoded in the loop, never stored wider. With the Vector API
 * ({@link PackedKernels#VECTOR}) the dot products run in {@link Q4KVectorKernels}; without it, each block is decoded
 * by ggml's reference arithmetic ({@link GgmlType#decodeBlock}) and dotted in scalar code.
 */
final class KQuantKernels {
    /** Values of one Q4_K block. */
    static final int Q4K_VALUES = 256;
    /** Bytes of one Q4_K block. */
    static final int Q4K_BYTES = 144;

    private KQuantKernels() {
    }

    /** Row {@code row} of a Q4_K matrix decoded, in order, into {@code out[offset, offset + cols)}: ggml's values bit for bit. */
    static void widenRowQ4K(ByteBuffer w, int base, int cols, float[] out, int offset) {
        ByteBuffer in = w.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        float[] block = new float[Q4K_VALUES];
        for (int b = 0; b < cols / Q4K_VALUES; b++) {
            GgmlType.Q4_K.decodeBlock(in, base + b * Q4K_BYTES, block);
            System.arraycopy(block, 0, out, offset + b * Q4K_VALUES, Q4K_VALUES);
        }
    }

    /** Row {@code row} of a Q4_K matrix, decoded block by block, times {@code x[xBase, xBase + k)}. */
    static float dotQ4K(ByteBuffer w, int base, float[] x, int xBase, int k) {
        ByteBuffer in = w.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        float[] block = new float[Q4K_VALUES];
        float t = 0f;
        for (int b = 0; b < k / Q4K_VALUES; b++) {
            GgmlType.Q4_K.decodeBlock(in, base + b * Q4K_BYTES, block);
            int xi = xBase + b * Q4K_VALUES;
            float s0 = 0f;
            float s1 = 0f;
            float s2 = 0f;
            float s3 = 0f;
            for (int i = 0; i < Q4K_VALUES; i += 4) {
                s0 += block[i] * x[xi + i];
                s1 += block[i + 1] * x[xi + i + 1];
                s2 += block[i + 2] * x[xi + i + 2];
                s3 += block[i + 3] * x[xi + i + 3];
            }
            t += (s0 + s1) + (s2 + s3);
        }
        return t;
    }

    /**
     * {@code out[n × m] = x[n × k] · w[m × k]ᵀ} for a Q4_K {@code w}, few rows of {@code x} (decode), the weight rows split
     * over {@link RowParallel}'s threads; {@code vector} picks {@link Q4KVectorKernels}. Shapes were checked by the caller.
     */
    static void project(boolean vector, CpuTensor x, PackedMatrix w, CpuTensor out) {
        int n = x.rows();
        int k = x.cols();
        int m = w.rows();
        FloatBuffer target = out.data();
        ByteBuffer bytes = w.bytes();
        int rowBytes = w.rowBytes();
        if (vector) {
            float[][] prepared = Q4KVectorKernels.prepare(x.data(), n, k);
            RowParallel.forRows(m, rowBytes, (from, to) ->
                    Q4KVectorKernels.project(bytes, rowBytes, prepared[0], prepared[1], n, k, target, m, from, to));
            return;
        }
        float[] xs = new float[n * k];
        x.data().get(0, xs, 0, n * k);
        RowParallel.forRows(m, rowBytes, (from, to) -> {
            for (int j = from; j < to; j++) {
                for (int r = 0; r < n; r++) {
                    target.put(r * m + j, dotQ4K(bytes, j * rowBytes, xs, r * k, k));
                }
            }
        });
    }
}
