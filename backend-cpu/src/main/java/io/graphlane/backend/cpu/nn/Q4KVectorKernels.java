package io.graphlane.backend.cpu.nn;

import static jdk.incubator.vector.VectorOperators.ADD;
import static jdk.incubator.vector.VectorOperators.AND;
import static jdk.incubator.vector.VectorOperators.OR;
import static jdk.incubator.vector.VectorOperators.LSHR;

import io.graphlane.checkpoint.recipe.HalfPrecision;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorSpecies;

/**
 * The SIMD kernels of a Q4_K matrix read in place (ggml's {@code block_q4_K}: {@code half d; half dmin; u8 scales[12];
 * u8 qs[128]}, eight sub-blocks of 32 values, {@code value = d·sc·q − dmin·m}), on the incubating Vector API.
 *
 * <p>A block's value is a 4-bit {@code q} times the sub-block's scale, less the sub-block's offset, so a dot product
 * with {@code x} is, per sub-block, {@code d·sc · Σ q·x − dmin·m · Σ x}: the second sum depends on {@code x} alone and is
 * taken once per call ({@link #prepare}), leaving one multiply-add per weight. The 32 bytes of {@code qs} that hold two
 * sub-blocks (low nibbles: values {@code l}, high nibbles: values {@code 32 + l}) are read as 8 lanes of 32 bits; nibble
 * {@code s} of each lane is {@code (lane >>> 4s) & 15}, made an F32 without a conversion ({@code | 0x4B000000} reads
 * as {@code 2²³ + q}, less {@code 2²³}), and met by {@code x} permuted per 32 values to
 * {@code [x0 x4 .. x28 | x1 x5 .. | x2 .. | x3 ..]} (byte {@code p} of lane {@code t} is value {@code 4t + p}).
 *
 * <p>One input row: each weight row is read once and dotted in registers. Several: each weight row is widened once into
 * an F32 scratch row (in the permuted order) and dotted with every input row while it is in L1.
 */
final class Q4KVectorKernels {
    private static final VectorSpecies<Float> FLOATS = FloatVector.SPECIES_256;
    private static final VectorSpecies<Integer> INTS = IntVector.SPECIES_256;
    private static final int L = 8;
    private static final int GROUP = 32;
    private static final int BLOCK_VALUES = KQuantKernels.Q4K_VALUES;
    private static final int BLOCK_BYTES = KQuantKernels.Q4K_BYTES;
    private static final int EXPONENT_23 = 0x4B000000;
    private static final float TWO_23 = 8388608f;
    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
    /** Per thread, one weight row widened for several input rows. */
    private static final ThreadLocal<float[]> ROW_SCRATCH = ThreadLocal.withInitial(() -> new float[0]);

    private Q4KVectorKernels() {
    }

    /**
     * {@code n} rows of {@code k} values of {@code x}, each group of 32 permuted as the kernels read it (index 0), and the
     * sum of every group of 32 (index 1, {@code k / 32} per row).
     */
    static float[][] prepare(FloatBuffer x, int n, int k) {
        float[] out = new float[n * k];
        float[] sums = new float[n * (k / GROUP)];
        float[] row = new float[k];
        for (int r = 0; r < n; r++) {
            x.get(r * k, row, 0, k);
            for (int g = 0; g < k / GROUP; g++) {
                int base = g * GROUP;
                float s = 0f;
                for (int t = 0; t < L; t++) {
                    for (int p = 0; p < 4; p++) {
                        float v = row[base + 4 * t + p];
                        out[r * k + base + p * L + t] = v;
                        s += v;
                    }
                }
                sums[r * (k / GROUP) + g] = s;
            }
        }
        return new float[][] {out, sums};
    }

    /**
     * {@code out[r·m + j] = W[j]·x[r]} for {@code j ∈ [from, to)}, {@code r < n}: {@code x} and {@code sums} as
     * {@link #prepare} made them, {@code W} Q4_K rows {@code rowBytes} apart.
     */
    static void project(ByteBuffer w, int rowBytes, float[] x, float[] sums, int n, int k, FloatBuffer out, int m,
                        int from, int to) {
        float[] scales = new float[k / GROUP];
        if (n == 1) {
            for (int j = from; j < to; j++) {
                out.put(j, dotRow(w, j * rowBytes, x, sums, k, scales));
            }
            return;
        }
        float[] row = rowScratch(k);
        int groups = k / GROUP;
        for (int j = from; j < to; j++) {
            float offsets = widen(w, j * rowBytes, k, row, sums, 0, scales);
            for (int r = 0; r < n; r++) {
                // the offsets (dmin·m per sub-block) meet each input row's sub-block sums
                float o = r == 0 ? offsets : unpackRow(w, j * rowBytes, k, scales, sums, r * groups);
                out.put(r * m + j, dotF32(row, x, r * k, k) - o);
            }
        }
    }

    private static float[] rowScratch(int k) {
        float[] row = ROW_SCRATCH.get();
        if (row.length < k) {
            row = new float[k];
            ROW_SCRATCH.set(row);
        }
        return row;
    }

    /**
     * Sub-block scales {@code d·sc} into {@code scales[t, t + 8)} for the block at {@code at}; returns
     * {@code Σ dmin·m · sums[s + j]} over its eight sub-blocks. The 12 packed bytes are read as a long and an int
     * (ggml's {@code get_scale_min_k4}: sub-blocks 0–3 take the low 6 bits of bytes {@code j} and {@code j + 4}; 4–7 a
     * nibble of byte {@code j + 8} and the top 2 bits of bytes {@code j} and {@code j + 4}).
     */
    private static float unpack(ByteBuffer w, int at, float[] scales, int t, float[] sums, int s) {
        float d = HalfPrecision.f16ToF32(w.getShort(at));
        float dmin = HalfPrecision.f16ToF32(w.getShort(at + 2));
        long low = w.getLong(at + 4);
        int high = w.getInt(at + 12);
        float offsets = 0f;
        for (int j = 0; j < 4; j++) {
            int sc = (int) (low >>> (8 * j)) & 63;
            int m = (int) (low >>> (8 * j + 32)) & 63;
            int nibbles = (high >>> (8 * j)) & 0xFF;
            int sc2 = (nibbles & 0xF) | ((int) (low >>> (8 * j + 6)) & 3) << 4;
            int m2 = (nibbles >>> 4) | ((int) (low >>> (8 * j + 38)) & 3) << 4;
            scales[t + j] = d * sc;
            scales[t + j + 4] = d * sc2;
            offsets += dmin * m * sums[s + j] + dmin * m2 * sums[s + j + 4];
        }
        return offsets;
    }

    /** The scales of every sub-block of the row at {@code base} into {@code scales[0, k / 32)}; returns its offsets' dot. */
    private static float unpackRow(ByteBuffer w, int base, int k, float[] scales, float[] sums, int s0) {
        float offsets = 0f;
        for (int b = 0; b < k / BLOCK_VALUES; b++) {
            offsets += unpack(w, base + b * BLOCK_BYTES, scales, b * 8, sums, s0 + b * 8);
        }
        return offsets;
    }

    /**
     * One weight row times one prepared input row, in registers: the scales first, then the low nibbles of every
     * 32 bytes of {@code qs} (even sub-blocks), then the high ones (odd sub-blocks). Each loop is as small as the 8-bit
     * kernel's, so the JIT's node budget never leaves a Vector API call out of line (a vector crossing a call that is
     * not inlined is boxed and runs the Java fallback, many times slower).
     */
    private static float dotRow(ByteBuffer w, int base, float[] x, float[] sums, int k, float[] scales) {
        float offsets = unpackRow(w, base, k, scales, sums, 0);
        FloatVector acc = FloatVector.zero(FLOATS);
        int chunks = k / 64;
        for (int c = 0; c < chunks; c++) {
            IntVector v = IntVector.fromByteBuffer(INTS, w, base + (c >> 2) * BLOCK_BYTES + 16 + 32 * (c & 3), LE);
            int e = 64 * c;
            FloatVector s = ((FloatVector) v.lanewise(AND, 15).lanewise(OR, EXPONENT_23).reinterpretShape(FLOATS, 0)).sub(TWO_23).mul(FloatVector.fromArray(FLOATS, x, e));
            s = ((FloatVector) v.lanewise(LSHR, 8).lanewise(AND, 15).lanewise(OR, EXPONENT_23).reinterpretShape(FLOATS, 0)).sub(TWO_23).fma(FloatVector.fromArray(FLOATS, x, e + L), s);
            s = ((FloatVector) v.lanewise(LSHR, 16).lanewise(AND, 15).lanewise(OR, EXPONENT_23).reinterpretShape(FLOATS, 0)).sub(TWO_23).fma(FloatVector.fromArray(FLOATS, x, e + 2 * L), s);
            s = ((FloatVector) v.lanewise(LSHR, 24).lanewise(AND, 15).lanewise(OR, EXPONENT_23).reinterpretShape(FLOATS, 0)).sub(TWO_23).fma(FloatVector.fromArray(FLOATS, x, e + 3 * L), s);
            acc = s.fma(FloatVector.broadcast(FLOATS, scales[2 * c]), acc);
        }
        for (int c = 0; c < chunks; c++) {
            IntVector v = IntVector.fromByteBuffer(INTS, w, base + (c >> 2) * BLOCK_BYTES + 16 + 32 * (c & 3), LE);
            int e = 64 * c + GROUP;
            FloatVector s = ((FloatVector) v.lanewise(LSHR, 4).lanewise(AND, 15).lanewise(OR, EXPONENT_23).reinterpretShape(FLOATS, 0)).sub(TWO_23).mul(FloatVector.fromArray(FLOATS, x, e));
            s = ((FloatVector) v.lanewise(LSHR, 12).lanewise(AND, 15).lanewise(OR, EXPONENT_23).reinterpretShape(FLOATS, 0)).sub(TWO_23).fma(FloatVector.fromArray(FLOATS, x, e + L), s);
            s = ((FloatVector) v.lanewise(LSHR, 20).lanewise(AND, 15).lanewise(OR, EXPONENT_23).reinterpretShape(FLOATS, 0)).sub(TWO_23).fma(FloatVector.fromArray(FLOATS, x, e + 2 * L), s);
            s = ((FloatVector) v.lanewise(LSHR, 28).lanewise(OR, EXPONENT_23).reinterpretShape(FLOATS, 0)).sub(TWO_23).fma(FloatVector.fromArray(FLOATS, x, e + 3 * L), s);
            acc = s.fma(FloatVector.broadcast(FLOATS, scales[2 * c + 1]), acc);
        }
        return acc.reduceLanes(ADD) - offsets;
    }

    /**
     * One weight row's {@code d·sc·q} into {@code row[0, k)} in the permuted order (the offsets left out); returns the
     * offsets' dot with the group sums of the input row at {@code sums[s0]}. Two small loops, as in {@link #dotRow}.
     */
    private static float widen(ByteBuffer w, int base, int k, float[] row, float[] sums, int s0, float[] scales) {
        float offsets = unpackRow(w, base, k, scales, sums, s0);
        int chunks = k / 64;
        for (int c = 0; c < chunks; c++) {
            IntVector v = IntVector.fromByteBuffer(INTS, w, base + (c >> 2) * BLOCK_BYTES + 16 + 32 * (c & 3), LE);
            int e = 64 * c;
            FloatVector scale = FloatVector.broadcast(FLOATS, scales[2 * c]);
            ((FloatVector) v.lanewise(AND, 15).lanewise(OR, EXPONENT_23).reinterpretShape(FLOATS, 0)).sub(TWO_23).mul(scale).intoArray(row, e);
            ((FloatVector) v.lanewise(LSHR, 8).lanewise(AND, 15).lanewise(OR, EXPONENT_23).reinterpretShape(FLOATS, 0)).sub(TWO_23).mul(scale).intoArray(row, e + L);
            ((FloatVector) v.lanewise(LSHR, 16).lanewise(AND, 15).lanewise(OR, EXPONENT_23).reinterpretShape(FLOATS, 0)).sub(TWO_23).mul(scale).intoArray(row, e + 2 * L);
            ((FloatVector) v.lanewise(LSHR, 24).lanewise(AND, 15).lanewise(OR, EXPONENT_23).reinterpretShape(FLOATS, 0)).sub(TWO_23).mul(scale).intoArray(row, e + 3 * L);
        }
        for (int c = 0; c < chunks; c++) {
            IntVector v = IntVector.fromByteBuffer(INTS, w, base + (c >> 2) * BLOCK_BYTES + 16 + 32 * (c & 3), LE);
            int e = 64 * c + GROUP;
            FloatVector scale = FloatVector.broadcast(FLOATS, scales[2 * c + 1]);
            ((FloatVector) v.lanewise(LSHR, 4).lanewise(AND, 15).lanewise(OR, EXPONENT_23).reinterpretShape(FLOATS, 0)).sub(TWO_23).mul(scale).intoArray(row, e);
            ((FloatVector) v.lanewise(LSHR, 12).lanewise(AND, 15).lanewise(OR, EXPONENT_23).reinterpretShape(FLOATS, 0)).sub(TWO_23).mul(scale).intoArray(row, e + L);
            ((FloatVector) v.lanewise(LSHR, 20).lanewise(AND, 15).lanewise(OR, EXPONENT_23).reinterpretShape(FLOATS, 0)).sub(TWO_23).mul(scale).intoArray(row, e + 2 * L);
            ((FloatVector) v.lanewise(LSHR, 28).lanewise(OR, EXPONENT_23).reinterpretShape(FLOATS, 0)).sub(TWO_23).mul(scale).intoArray(row, e + 3 * L);
        }
        return offsets;
    }

    /** {@code w[0, k) · x[x0, x0 + k)}. */
    private static float dotF32(float[] w, float[] x, int x0, int k) {
        FloatVector a0 = FloatVector.zero(FLOATS);
        FloatVector a1 = FloatVector.zero(FLOATS);
        for (int i = 0; i < k; i += 2 * L) {
            a0 = FloatVector.fromArray(FLOATS, w, i).fma(FloatVector.fromArray(FLOATS, x, x0 + i), a0);
            a1 = FloatVector.fromArray(FLOATS, w, i + L).fma(FloatVector.fromArray(FLOATS, x, x0 + i + L), a1);
        }
        return a0.add(a1).reduceLanes(ADD);
    }
}
