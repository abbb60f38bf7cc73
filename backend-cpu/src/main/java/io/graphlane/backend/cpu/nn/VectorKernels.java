package io.graphlane.backend.cpu.nn;

import io.graphlane.checkpoint.recipe.BlockQ8;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * The SIMD projection kernels of a decode step, on the incubating Vector API: {@code out = x · Wᵀ} for a few
 * rows of {@code x}, over weight rows {@code [from, to)} (one {@link RowParallel} part), each weight row read
 * from memory once and dotted with every input row while it is in L1. F32, BF16 and 8-bit weights alike; the
 * 16-bit and 8-bit ones are widened in registers without a lane-changing conversion:
 *
 * <ul>
 *   <li>BF16: 8 lanes of 32 bits hold 16 weights; {@code lane << 16} is the even weight of each pair as an F32
 *       and {@code lane & 0xFFFF0000} the odd one, so each lane pair meets the input {@link #prepare permuted}
 *       once per call to {@code [x0 x2 .. x14 | x1 x3 .. x15]} per 16 elements;</li>
 *   <li>8-bit ({@link BlockQ8}): 8 lanes of 32 bits hold one block of 32; {@code (lane << 24 - 8p) >> 24} is
 *       byte {@code p} of each lane sign-extended, converted to F32 and met by the input permuted to
 *       {@code [x0 x4 .. x28 | x1 x5 .. | x2 .. | x3 ..]} per block.</li>
 * </ul>
 *
 * Loaded only when the JVM runs with {@code --add-modules jdk.incubator.vector} ({@link PackedKernels#VECTOR});
 * otherwise the scalar loops and OpenBLAS run.
 */
final class VectorKernels {
    private static final VectorSpecies<Float> FLOATS = FloatVector.SPECIES_256;
    private static final VectorSpecies<Integer> INTS = IntVector.SPECIES_256;
    /** Floats per vector. */
    private static final int L = 8;
    /** Input rows one pass over a weight row serves (their accumulators live in registers). */
    static final int ROWS_PER_PASS = 4;
    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;

    private VectorKernels() {
    }

    /** The length of {@link #prepare}'s output for {@code n} rows of {@code k} elements. */
    static int preparedLength(int n, int k) {
        return n * k;
    }

    /**
     * Copies {@code n} rows of {@code k} floats from {@code x} into {@code out}, each row permuted as {@code encoding}'s
     * kernel reads it (F32: unchanged; BF16: per 16 elements even then odd ones; 8-bit: per block of 32, the four
     * byte phases), the tail that no whole group covers left in place.
     */
    static void prepare(PackedMatrix.Encoding encoding, FloatBuffer x, int n, int k, float[] out) {
        x.get(0, out, 0, n * k);
        if (encoding == null) {
            return;
        }
        int group = encoding == PackedMatrix.Encoding.BF16 ? 2 * L : 4 * L;
        int phases = group / L;
        float[] tmp = new float[4 * L];
        for (int r = 0; r < n; r++) {
            int base = r * k;
            for (int g = 0; g + group <= k; g += group) {
                System.arraycopy(out, base + g, tmp, 0, group);
                for (int t = 0; t < L; t++) {
                    for (int p = 0; p < phases; p++) {
                        out[base + g + p * L + t] = tmp[phases * t + p];
                    }
                }
            }
        }
    }

    /**
     * {@code out[r·m + j] = W[j]·x[r]} for {@code j ∈ [from, to)}, {@code r < n}: {@code x} as {@link #prepare} left it,
     * {@code W} in {@code encoding} ({@code null}: F32 little-endian) with rows {@code rowBytes} apart.
     */
    static void project(PackedMatrix.Encoding encoding, ByteBuffer w, int rowBytes, float[] x, int n, int k,
                        FloatBuffer out, int m, int from, int to) {
        float[] acc = new float[ROWS_PER_PASS];
        if (encoding == null && n > 1) {
            projectF32Pairs(w, rowBytes, x, n, k, out, m, from, to, acc);
            return;
        }
        for (int j = from; j < to; j++) {
            int base = j * rowBytes;
            for (int r = 0; r < n; r += ROWS_PER_PASS) {
                int rows = Math.min(ROWS_PER_PASS, n - r);
                if (encoding == null) {
                    dotF32(w, base, x, r * k, rows, k, acc);
                } else if (encoding == PackedMatrix.Encoding.BF16) {
                    dotBf16(w, base, x, r * k, rows, k, acc);
                } else {
                    dotQ8(w, base, x, r * k, rows, k, acc);
                }
                for (int i = 0; i < rows; i++) {
                    out.put((r + i) * m + j, acc[i]);
                }
            }
        }
    }

    /**
     * {@link #project} of F32 weights for several input rows, where the arithmetic rather than the weights' bytes bounds
     * the rate: two weight rows at a time against up to 4 input rows, so each input vector loaded serves two
     * multiply-adds (eight accumulators in registers).
     */
    private static void projectF32Pairs(ByteBuffer w, int rowBytes, float[] x, int n, int k, FloatBuffer out, int m, int from, int to,
                                        float[] acc) {
        float[] second = new float[ROWS_PER_PASS];
        int j = from;
        for (; j + 1 < to; j += 2) {
            int base = j * rowBytes;
            for (int r = 0; r < n; r += ROWS_PER_PASS) {
                int rows = Math.min(ROWS_PER_PASS, n - r);
                dotF32Pair(w, base, base + rowBytes, x, r * k, rows, k, acc, second);
                for (int i = 0; i < rows; i++) {
                    out.put((r + i) * m + j, acc[i]);
                    out.put((r + i) * m + j + 1, second[i]);
                }
            }
        }
        if (j < to) {
            for (int r = 0; r < n; r += ROWS_PER_PASS) {
                int rows = Math.min(ROWS_PER_PASS, n - r);
                dotF32(w, j * rowBytes, x, r * k, rows, k, acc);
                for (int i = 0; i < rows; i++) {
                    out.put((r + i) * m + j, acc[i]);
                }
            }
        }
    }

    /** Two F32 weight rows (at {@code baseA} and {@code baseB}) against {@code rows} (1 to 4) input rows {@code k} apart from {@code x0}. */
    private static void dotF32Pair(ByteBuffer w, int baseA, int baseB, float[] x, int x0, int rows, int k, float[] accA, float[] accB) {
        FloatVector a0 = FloatVector.zero(FLOATS);
        FloatVector a1 = FloatVector.zero(FLOATS);
        FloatVector a2 = FloatVector.zero(FLOATS);
        FloatVector a3 = FloatVector.zero(FLOATS);
        FloatVector b0 = FloatVector.zero(FLOATS);
        FloatVector b1 = FloatVector.zero(FLOATS);
        FloatVector b2 = FloatVector.zero(FLOATS);
        FloatVector b3 = FloatVector.zero(FLOATS);
        int x1 = rows > 1 ? x0 + k : x0;
        int x2 = rows > 2 ? x1 + k : x1;
        int x3 = rows > 3 ? x2 + k : x2;
        int i = 0;
        for (; i + L <= k; i += L) {
            FloatVector wa = FloatVector.fromByteBuffer(FLOATS, w, baseA + 4 * i, LE);
            FloatVector wb = FloatVector.fromByteBuffer(FLOATS, w, baseB + 4 * i, LE);
            FloatVector v = FloatVector.fromArray(FLOATS, x, x0 + i);
            a0 = wa.fma(v, a0);
            b0 = wb.fma(v, b0);
            v = FloatVector.fromArray(FLOATS, x, x1 + i);
            a1 = wa.fma(v, a1);
            b1 = wb.fma(v, b1);
            v = FloatVector.fromArray(FLOATS, x, x2 + i);
            a2 = wa.fma(v, a2);
            b2 = wb.fma(v, b2);
            v = FloatVector.fromArray(FLOATS, x, x3 + i);
            a3 = wa.fma(v, a3);
            b3 = wb.fma(v, b3);
        }
        finishRows(a0, a1, a2, a3, w, baseA, false, x, x0, k, i, rows, accA);
        finishRows(b0, b1, b2, b3, w, baseB, false, x, x0, k, i, rows, accB);
    }

    /** One F32 weight row against {@code rows} (1 to 4) input rows {@code k} apart from {@code x0}. */
    private static void dotF32(ByteBuffer w, int base, float[] x, int x0, int rows, int k, float[] acc) {
        int i = 0;
        if (rows == 1) {
            FloatVector a0 = FloatVector.zero(FLOATS);
            FloatVector a1 = FloatVector.zero(FLOATS);
            FloatVector a2 = FloatVector.zero(FLOATS);
            FloatVector a3 = FloatVector.zero(FLOATS);
            for (; i + 4 * L <= k; i += 4 * L) {
                int b = base + 4 * i;
                a0 = FloatVector.fromByteBuffer(FLOATS, w, b, LE).fma(FloatVector.fromArray(FLOATS, x, x0 + i), a0);
                a1 = FloatVector.fromByteBuffer(FLOATS, w, b + 4 * L, LE).fma(FloatVector.fromArray(FLOATS, x, x0 + i + L), a1);
                a2 = FloatVector.fromByteBuffer(FLOATS, w, b + 8 * L, LE).fma(FloatVector.fromArray(FLOATS, x, x0 + i + 2 * L), a2);
                a3 = FloatVector.fromByteBuffer(FLOATS, w, b + 12 * L, LE).fma(FloatVector.fromArray(FLOATS, x, x0 + i + 3 * L), a3);
            }
            for (; i + L <= k; i += L) {
                a0 = FloatVector.fromByteBuffer(FLOATS, w, base + 4 * i, LE).fma(FloatVector.fromArray(FLOATS, x, x0 + i), a0);
            }
            acc[0] = finishRow(a0.add(a1).add(a2.add(a3)), w, base, false, x, x0, i, k);
            return;
        }
        FloatVector a0 = FloatVector.zero(FLOATS);
        FloatVector a1 = FloatVector.zero(FLOATS);
        FloatVector a2 = FloatVector.zero(FLOATS);
        FloatVector a3 = FloatVector.zero(FLOATS);
        int x1 = x0 + k;
        int x2 = rows > 2 ? x1 + k : x1;
        int x3 = rows > 3 ? x2 + k : x2;
        for (; i + L <= k; i += L) {
            FloatVector wv = FloatVector.fromByteBuffer(FLOATS, w, base + 4 * i, LE);
            a0 = wv.fma(FloatVector.fromArray(FLOATS, x, x0 + i), a0);
            a1 = wv.fma(FloatVector.fromArray(FLOATS, x, x1 + i), a1);
            a2 = wv.fma(FloatVector.fromArray(FLOATS, x, x2 + i), a2);
            a3 = wv.fma(FloatVector.fromArray(FLOATS, x, x3 + i), a3);
        }
        finishRows(a0, a1, a2, a3, w, base, false, x, x0, k, i, rows, acc);
    }

    /** One BF16 weight row against {@code rows} (1 to 4) input rows permuted by {@link #prepare}. */
    private static void dotBf16(ByteBuffer w, int base, float[] x, int x0, int rows, int k, float[] acc) {
        int i = 0;
        if (rows == 1) {
            FloatVector a0 = FloatVector.zero(FLOATS);
            FloatVector a1 = FloatVector.zero(FLOATS);
            FloatVector a2 = FloatVector.zero(FLOATS);
            FloatVector a3 = FloatVector.zero(FLOATS);
            for (; i + 4 * L <= k; i += 4 * L) {
                IntVector p = IntVector.fromByteBuffer(INTS, w, base + 2 * i, LE);
                IntVector q = IntVector.fromByteBuffer(INTS, w, base + 2 * i + 4 * L, LE);
                a0 = even(p).fma(FloatVector.fromArray(FLOATS, x, x0 + i), a0);
                a1 = odd(p).fma(FloatVector.fromArray(FLOATS, x, x0 + i + L), a1);
                a2 = even(q).fma(FloatVector.fromArray(FLOATS, x, x0 + i + 2 * L), a2);
                a3 = odd(q).fma(FloatVector.fromArray(FLOATS, x, x0 + i + 3 * L), a3);
            }
            for (; i + 2 * L <= k; i += 2 * L) {
                IntVector p = IntVector.fromByteBuffer(INTS, w, base + 2 * i, LE);
                a0 = even(p).fma(FloatVector.fromArray(FLOATS, x, x0 + i), a0);
                a1 = odd(p).fma(FloatVector.fromArray(FLOATS, x, x0 + i + L), a1);
            }
            acc[0] = finishRow(a0.add(a1).add(a2.add(a3)), w, base, true, x, x0, i, k);
            return;
        }
        FloatVector a0 = FloatVector.zero(FLOATS);
        FloatVector a1 = FloatVector.zero(FLOATS);
        FloatVector a2 = FloatVector.zero(FLOATS);
        FloatVector a3 = FloatVector.zero(FLOATS);
        int x1 = x0 + k;
        int x2 = rows > 2 ? x1 + k : x1;
        int x3 = rows > 3 ? x2 + k : x2;
        for (; i + 2 * L <= k; i += 2 * L) {
            IntVector p = IntVector.fromByteBuffer(INTS, w, base + 2 * i, LE);
            FloatVector e = even(p);
            FloatVector o = odd(p);
            a0 = o.fma(FloatVector.fromArray(FLOATS, x, x0 + i + L), e.fma(FloatVector.fromArray(FLOATS, x, x0 + i), a0));
            a1 = o.fma(FloatVector.fromArray(FLOATS, x, x1 + i + L), e.fma(FloatVector.fromArray(FLOATS, x, x1 + i), a1));
            a2 = o.fma(FloatVector.fromArray(FLOATS, x, x2 + i + L), e.fma(FloatVector.fromArray(FLOATS, x, x2 + i), a2));
            a3 = o.fma(FloatVector.fromArray(FLOATS, x, x3 + i + L), e.fma(FloatVector.fromArray(FLOATS, x, x3 + i), a3));
        }
        finishRows(a0, a1, a2, a3, w, base, true, x, x0, k, i, rows, acc);
    }

    /** The lanes of {@code sum} added up, plus the elements {@code [i, k)} that no whole vector covered. */
    private static float finishRow(FloatVector sum, ByteBuffer w, int base, boolean bf16, float[] x, int x0, int i, int k) {
        float total = sum.reduceLanes(VectorOperators.ADD);
        for (; i < k; i++) {
            total += weight(w, base, i, bf16) * x[x0 + i];
        }
        return total;
    }

    /** {@link #finishRow} for up to 4 input rows {@code k} apart from {@code x0}, into {@code acc[0, rows)}. */
    private static void finishRows(FloatVector a0, FloatVector a1, FloatVector a2, FloatVector a3, ByteBuffer w, int base, boolean bf16,
                                   float[] x, int x0, int k, int i, int rows, float[] acc) {
        store(acc, rows, finishRow(a0, w, base, bf16, x, x0, i, k), rows > 1 ? finishRow(a1, w, base, bf16, x, x0 + k, i, k) : 0f,
                rows > 2 ? finishRow(a2, w, base, bf16, x, x0 + 2 * k, i, k) : 0f,
                rows > 3 ? finishRow(a3, w, base, bf16, x, x0 + 3 * k, i, k) : 0f);
    }

    private static float weight(ByteBuffer w, int base, int i, boolean bf16) {
        return bf16 ? bf16(w, base, i) : w.getFloat(base + 4 * i);
    }

    private static float bf16(ByteBuffer w, int base, int i) {
        return Float.intBitsToFloat(w.getShort(base + 2 * i) << 16);
    }

    private static FloatVector even(IntVector pairs) {
        return pairs.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats();
    }

    private static FloatVector odd(IntVector pairs) {
        return pairs.lanewise(VectorOperators.AND, 0xFFFF0000).reinterpretAsFloats();
    }

    /** One 8-bit weight row (blocks of 32, scales after the row's bytes) against {@code rows} (1 to 4) permuted input rows. */
    private static void dotQ8(ByteBuffer w, int base, float[] x, int x0, int rows, int k, float[] acc) {
        int blocks = k / BlockQ8.BLOCK;
        int scales = base + k;
        if (rows == 1) {
            FloatVector t0 = FloatVector.zero(FLOATS);
            FloatVector t1 = FloatVector.zero(FLOATS);
            int b = 0;
            for (; b + 2 <= blocks; b += 2) {
                t0 = blockQ8(w, base + b * BlockQ8.BLOCK, x, x0 + b * BlockQ8.BLOCK)
                        .fma(FloatVector.broadcast(FLOATS, w.getFloat(scales + b * Float.BYTES)), t0);
                t1 = blockQ8(w, base + (b + 1) * BlockQ8.BLOCK, x, x0 + (b + 1) * BlockQ8.BLOCK)
                        .fma(FloatVector.broadcast(FLOATS, w.getFloat(scales + (b + 1) * Float.BYTES)), t1);
            }
            if (b < blocks) {
                t0 = blockQ8(w, base + b * BlockQ8.BLOCK, x, x0 + b * BlockQ8.BLOCK)
                        .fma(FloatVector.broadcast(FLOATS, w.getFloat(scales + b * Float.BYTES)), t0);
            }
            acc[0] = t0.add(t1).reduceLanes(VectorOperators.ADD);
            return;
        }
        FloatVector a0 = FloatVector.zero(FLOATS);
        FloatVector a1 = FloatVector.zero(FLOATS);
        FloatVector a2 = FloatVector.zero(FLOATS);
        FloatVector a3 = FloatVector.zero(FLOATS);
        int x1 = x0 + k;
        int x2 = rows > 2 ? x1 + k : x1;
        int x3 = rows > 3 ? x2 + k : x2;
        for (int b = 0; b < blocks; b++) {
            int q = base + b * BlockQ8.BLOCK;
            int xb = b * BlockQ8.BLOCK;
            FloatVector scale = FloatVector.broadcast(FLOATS, w.getFloat(scales + b * Float.BYTES));
            IntVector v = IntVector.fromByteBuffer(INTS, w, q, LE);
            FloatVector w0 = byteOf(v, 24).mul(scale);
            FloatVector w1 = byteOf(v, 16).mul(scale);
            FloatVector w2 = byteOf(v, 8).mul(scale);
            FloatVector w3 = ((FloatVector) v.lanewise(VectorOperators.ASHR, 24).convert(VectorOperators.I2F, 0)).mul(scale);
            a0 = phases(w0, w1, w2, w3, x, x0 + xb, a0);
            a1 = phases(w0, w1, w2, w3, x, x1 + xb, a1);
            a2 = phases(w0, w1, w2, w3, x, x2 + xb, a2);
            a3 = phases(w0, w1, w2, w3, x, x3 + xb, a3);
        }
        store(acc, rows, a0.reduceLanes(VectorOperators.ADD), a1.reduceLanes(VectorOperators.ADD),
                a2.reduceLanes(VectorOperators.ADD), a3.reduceLanes(VectorOperators.ADD));
    }

    private static FloatVector phases(FloatVector w0, FloatVector w1, FloatVector w2, FloatVector w3, float[] x, int xi, FloatVector a) {
        a = w0.fma(FloatVector.fromArray(FLOATS, x, xi), a);
        a = w1.fma(FloatVector.fromArray(FLOATS, x, xi + L), a);
        a = w2.fma(FloatVector.fromArray(FLOATS, x, xi + 2 * L), a);
        return w3.fma(FloatVector.fromArray(FLOATS, x, xi + 3 * L), a);
    }

    /** The unscaled dot product, lane by lane, of one block of 32 weights at {@code q} with the permuted input at {@code xi}. */
    private static FloatVector blockQ8(ByteBuffer w, int q, float[] x, int xi) {
        IntVector v = IntVector.fromByteBuffer(INTS, w, q, LE);
        FloatVector s = byteOf(v, 24).mul(FloatVector.fromArray(FLOATS, x, xi));
        s = byteOf(v, 16).fma(FloatVector.fromArray(FLOATS, x, xi + L), s);
        s = byteOf(v, 8).fma(FloatVector.fromArray(FLOATS, x, xi + 2 * L), s);
        return ((FloatVector) v.lanewise(VectorOperators.ASHR, 24).convert(VectorOperators.I2F, 0))
                .fma(FloatVector.fromArray(FLOATS, x, xi + 3 * L), s);
    }

    /** The byte of each lane whose top is {@code shift} bits below the lane's top, sign-extended, as F32. */
    private static FloatVector byteOf(IntVector v, int shift) {
        return (FloatVector) v.lanewise(VectorOperators.LSHL, shift).lanewise(VectorOperators.ASHR, 24).convert(VectorOperators.I2F, 0);
    }

    private static void store(float[] acc, int rows, float s0, float s1, float s2, float s3) {
        acc[0] = s0;
        if (rows > 1) {
            acc[1] = s1;
        }
        if (rows > 2) {
            acc[2] = s2;
        }
        if (rows > 3) {
            acc[3] = s3;
        }
    }
}
