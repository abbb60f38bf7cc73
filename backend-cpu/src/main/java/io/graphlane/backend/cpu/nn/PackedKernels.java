package io.graphlane.backend.cpu.nn;

import io.graphlane.checkpoint.recipe.BlockQ8;
import io.graphlane.checkpoint.recipe.HalfPrecision;
import java.nio.ByteBuffer;

/**
 * Dot products of one row of a {@link PackedMatrix} with F32 activations, widening the weights in
 * the loop. Written for C2: counted loops over absolute buffer reads, 8 bytes of weights per read,
 * and independent accumulators so the adds do not wait on each other.
 */
final class PackedKernels {
    /**
     * True when the JVM runs with {@code --add-modules jdk.incubator.vector}: BF16 and 8-bit rows then go through
     * {@link VectorKernels}, about four times the scalar loops' rate on AVX2.
     */
    static final boolean VECTOR = ModuleLayer.boot().findModule("jdk.incubator.vector").isPresent();

    private PackedKernels() {
    }

    /** Row {@code row} of {@code w} times {@code x[xBase, xBase + cols)}. */
    static float dot(PackedMatrix w, int row, float[] x, int xBase) {
        int base = row * w.rowBytes();
        return switch (w.encoding()) {
            case BF16 -> dotBf16(w.bytes(), base, x, xBase, w.cols());
            case F16 -> dotF16(w.bytes(), base, x, xBase, w.cols());
            case Q8_0 -> dotQ8(w.bytes(), base, x, xBase, w.cols());
            case Q4_K -> KQuantKernels.dotQ4K(w.bytes(), base, x, xBase, w.cols());
        };
    }

    static float dotBf16(ByteBuffer w, int base, float[] x, int xBase, int k) {
        float a0 = 0f;
        float a1 = 0f;
        float a2 = 0f;
        float a3 = 0f;
        float a4 = 0f;
        float a5 = 0f;
        float a6 = 0f;
        float a7 = 0f;
        int i = 0;
        int limit = k - 7;
        for (; i < limit; i += 8) {
            long l0 = w.getLong(base + 2 * i);
            long l1 = w.getLong(base + 2 * i + 8);
            int p0 = (int) l0;
            int p1 = (int) (l0 >>> 32);
            int p2 = (int) l1;
            int p3 = (int) (l1 >>> 32);
            int xi = xBase + i;
            a0 += Float.intBitsToFloat(p0 << 16) * x[xi];
            a1 += Float.intBitsToFloat(p0 & 0xFFFF0000) * x[xi + 1];
            a2 += Float.intBitsToFloat(p1 << 16) * x[xi + 2];
            a3 += Float.intBitsToFloat(p1 & 0xFFFF0000) * x[xi + 3];
            a4 += Float.intBitsToFloat(p2 << 16) * x[xi + 4];
            a5 += Float.intBitsToFloat(p2 & 0xFFFF0000) * x[xi + 5];
            a6 += Float.intBitsToFloat(p3 << 16) * x[xi + 6];
            a7 += Float.intBitsToFloat(p3 & 0xFFFF0000) * x[xi + 7];
        }
        for (; i < k; i++) {
            a0 += Float.intBitsToFloat(w.getShort(base + 2 * i) << 16) * x[xBase + i];
        }
        return ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7));
    }

    static float dotF16(ByteBuffer w, int base, float[] x, int xBase, int k) {
        float a0 = 0f;
        float a1 = 0f;
        float a2 = 0f;
        float a3 = 0f;
        int i = 0;
        int limit = k - 3;
        for (; i < limit; i += 4) {
            long l = w.getLong(base + 2 * i);
            int xi = xBase + i;
            a0 += HalfPrecision.f16ToF32((short) l) * x[xi];
            a1 += HalfPrecision.f16ToF32((short) (l >>> 16)) * x[xi + 1];
            a2 += HalfPrecision.f16ToF32((short) (l >>> 32)) * x[xi + 2];
            a3 += HalfPrecision.f16ToF32((short) (l >>> 48)) * x[xi + 3];
        }
        for (; i < k; i++) {
            a0 += HalfPrecision.f16ToF32(w.getShort(base + 2 * i)) * x[xBase + i];
        }
        return (a0 + a1) + (a2 + a3);
    }

    static float dotQ8(ByteBuffer w, int base, float[] x, int xBase, int k) {
        int blocks = k / BlockQ8.BLOCK;
        int scales = base + k;
        float t0 = 0f;
        float t1 = 0f;
        for (int b = 0; b < blocks; b++) {
            int q = base + b * BlockQ8.BLOCK;
            int xi = xBase + b * BlockQ8.BLOCK;
            float s0 = 0f;
            float s1 = 0f;
            float s2 = 0f;
            float s3 = 0f;
            for (int j = 0; j < BlockQ8.BLOCK; j += 8) {
                long l = w.getLong(q + j);
                int xj = xi + j;
                s0 += (byte) l * x[xj] + (byte) (l >> 8) * x[xj + 1];
                s1 += (byte) (l >> 16) * x[xj + 2] + (byte) (l >> 24) * x[xj + 3];
                s2 += (byte) (l >> 32) * x[xj + 4] + (byte) (l >> 40) * x[xj + 5];
                s3 += (byte) (l >> 48) * x[xj + 6] + (byte) (l >> 56) * x[xj + 7];
            }
            float block = w.getFloat(scales + b * Float.BYTES) * ((s0 + s1) + (s2 + s3));
            if ((b & 1) == 0) {
                t0 += block;
            } else {
                t1 += block;
            }
        }
        return t0 + t1;
    }
}
