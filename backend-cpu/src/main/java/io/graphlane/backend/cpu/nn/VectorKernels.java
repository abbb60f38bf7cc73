package io.graphlane.backend.cpu.nn;

import static jdk.incubator.vector.VectorOperators.ADD;
import static jdk.incubator.vector.VectorOperators.AND;
import static jdk.incubator.vector.VectorOperators.ASHR;
import static jdk.incubator.vector.VectorOperators.I2F;
import static jdk.incubator.vector.VectorOperators.LSHL;

import io.graphlane.checkpoint.recipe.BlockQ8;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorSpecies;

/**
 * The SIMD projection kernels of a decode step, on the incubating Vector API: {@code out = x · Wᵀ} for a few
 * rows of {@code x}, over weight rows {@code [from, to)} (one {@link RowParallel} part), each weight row read
 * from memory once and dotted with every input row while it is in L1. F32, BF16 and 8-bit weights alike; the
 * 16-bit and 8-bit ones are widened in registers without a lane-changing conversion:
 *
 * <ul>
 *   <li>BF16: {@code L} lanes of 32 bits hold {@code 2L} weights; {@code lane << 16} is the even weight of each pair as
 *       an F32 and {@code lane & 0xFFFF0000} the odd one, so each lane pair meets the input {@link #prepare permuted}
 *       once per call to {@code [x0 x2 .. | x1 x3 ..]} per {@code 2L} elements;</li>
 *   <li>8-bit ({@link BlockQ8}): 8 lanes of 32 bits hold one block of 32; {@code (lane << 24 - 8p) >> 24} is byte
 *       {@code p} of each lane sign-extended, converted to F32 and met by the input permuted to
 *       {@code [x0 x4 .. x28 | x1 x5 .. | x2 .. | x3 ..]} per block, then scaled by the block's scale.</li>
 * </ul>
 *
 * The BF16 vectors and the several-row F32 ones are {@link #BITS} wide ({@value CpuNeuralBackend#VECTOR_BITS_PROPERTY}):
 * 512 where the JVM's preferred width is (AVX-512), else 256; elements that no whole vector covers are done one by one.
 * The one-row F32 kernel (bandwidth-bound) and the 8-bit ones are 256 bits wide at any width. Every call shape has its own method (one row, a few rows; per encoding), and
 * no vector crosses a call of ours: the JIT may leave any such call out of line (a small helper too, once it has
 * compiled code of its own of some size), and then the vector is boxed and the Vector API calls around it run their
 * Java fallbacks, many times slower, in some runs and not others.
 *
 * <p>Loaded only when the JVM runs with {@code --add-modules jdk.incubator.vector} ({@link PackedKernels#VECTOR});
 * otherwise the scalar loops and OpenBLAS run.
 */
final class VectorKernels {
    /** The vector width of the kernels in bits, 256 or 512 ({@link CpuNeuralBackend#vectorBits}). */
    static final int BITS = CpuNeuralBackend.vectorBits(System.getProperty(CpuNeuralBackend.VECTOR_BITS_PROPERTY),
            FloatVector.SPECIES_PREFERRED.vectorBitSize(), false);
    private static final VectorSpecies<Float> FLOATS = BITS == 512 ? FloatVector.SPECIES_512 : FloatVector.SPECIES_256;
    private static final VectorSpecies<Integer> INTS = BITS == 512 ? IntVector.SPECIES_512 : IntVector.SPECIES_256;
    /** Floats per vector. */
    private static final int L = BITS / Float.SIZE;
    /**
     * The 8-bit kernels' vectors: 256 bits, one block of 32 weights, at any {@link #BITS}. At 512 bits two blocks share a
     * vector and need their two scales blended in; measured no faster on AVX-512 (Zen 4), for simpler code.
     */
    private static final VectorSpecies<Float> Q8_FLOATS = FloatVector.SPECIES_256;
    private static final VectorSpecies<Integer> Q8_INTS = IntVector.SPECIES_256;
    private static final int Q8_L = 8;
    /**
     * The one-row F32 kernel's vectors (one request's decode: bandwidth-bound): 256 bits at any {@link #BITS}. On
     * AVX-512 (Zen 4) the 512-bit kernel streamed the demo model's decode-step weights at 0.7-0.8 of the 256-bit one's
     * rate, both measured in one JVM, alternating step by step, weights at the file's 48-byte offset. The one-row BF16
     * kernel stays at {@link #BITS}: widening makes it compute-bound at 256 bits (about half the weights per second).
     */
    private static final VectorSpecies<Float> ROW_FLOATS = FloatVector.SPECIES_256;
    /** Floats per one-row F32 vector. */
    private static final int RL = 8;
    /** Input rows one pass over a weight row serves (their accumulators live in registers). */
    static final int ROWS_PER_PASS = 4;
    /** Input rows one pass over a pair of F32 weight rows serves ({@link #dotF32Pair8}: sixteen accumulators). */
    static final int PAIR_ROWS_PER_PASS = 8;
    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
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
        boolean bf16 = encoding == PackedMatrix.Encoding.BF16;
        int lanes = bf16 ? L : Q8_L;
        int phases = bf16 ? 2 : 4;
        int group = phases * lanes;
        float[] tmp = new float[group];
        for (int r = 0; r < n; r++) {
            int base = r * k;
            for (int g = 0; g + group <= k; g += group) {
                System.arraycopy(out, base + g, tmp, 0, group);
                for (int t = 0; t < lanes; t++) {
                    for (int p = 0; p < phases; p++) {
                        out[base + g + p * lanes + t] = tmp[phases * t + p];
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
        // one method per shape, so that what the JIT inlines into one never crowds out the kernels of the other
        if (n == 1) {
            projectOneRow(encoding, w, rowBytes, x, k, out, from, to);
        } else {
            projectRows(encoding, w, rowBytes, x, n, k, out, m, from, to);
        }
    }

    /** {@link #project} of one input row. */
    private static void projectOneRow(PackedMatrix.Encoding encoding, ByteBuffer w, int rowBytes, float[] x, int k,
                                      FloatBuffer out, int from, int to) {
        if (encoding == PackedMatrix.Encoding.Q8_0) {
            dotQ8Rows(w, rowBytes, x, k, out, from, to);
            return;
        }
        boolean bf16 = encoding == PackedMatrix.Encoding.BF16;
        for (int j = from; j < to; j++) {
            int base = j * rowBytes;
            out.put(j, bf16 ? dotBf16Row(w, base, x, k) : dotF32Row(w, base, x, 0, k));
        }
    }

    /**
     * {@link #project} of several input rows: one method per encoding, each the root of its own compilation, so that the
     * JIT's inlining budget and type profile of one (BF16 of a head, 8-bit of the layers) never cut the Vector API calls
     * the other must inline (a shared loop over both ran the 8-bit path's stores through the Vector API's scalar fallback).
     */
    private static void projectRows(PackedMatrix.Encoding encoding, ByteBuffer w, int rowBytes, float[] x, int n, int k,
                                    FloatBuffer out, int m, int from, int to) {
        if (encoding == null) {
            projectF32Pairs(w, rowBytes, x, n, k, out, m, from, to, new float[ROWS_PER_PASS]);
        } else if (encoding == PackedMatrix.Encoding.BF16) {
            projectBf16Rows(w, rowBytes, x, n, k, out, m, from, to);
        } else {
            projectQ8Rows(w, rowBytes, x, n, k, out, m, from, to);
        }
    }

    /**
     * {@link #projectRows} of BF16 weights: each weight row widened once per {@link #PAIR_ROWS_PER_PASS} input rows (the
     * four-row kernel for up to four of them).
     */
    private static void projectBf16Rows(ByteBuffer w, int rowBytes, float[] x, int n, int k, FloatBuffer out, int m, int from, int to) {
        float[] acc = new float[PAIR_ROWS_PER_PASS];
        for (int j = from; j < to; j++) {
            int base = j * rowBytes;
            for (int r = 0; r < n; r += PAIR_ROWS_PER_PASS) {
                int rows = Math.min(PAIR_ROWS_PER_PASS, n - r);
                if (rows > ROWS_PER_PASS) {
                    dotBf16x8(w, base, x, r * k, rows, k, acc);
                } else {
                    dotBf16(w, base, x, r * k, rows, k, acc);
                }
                for (int i = 0; i < rows; i++) {
                    out.put((r + i) * m + j, acc[i]);
                }
            }
        }
    }

    /**
     * {@link #projectRows} of 8-bit weights: each block of 32 weights widened once in registers (times its scale) and met
     * by up to {@link #PAIR_ROWS_PER_PASS} input rows, nothing stored between the widening and the multiply-adds.
     */
    private static void projectQ8Rows(ByteBuffer w, int rowBytes, float[] x, int n, int k, FloatBuffer out, int m, int from, int to) {
        float[] acc = new float[PAIR_ROWS_PER_PASS];
        for (int j = from; j < to; j++) {
            int base = j * rowBytes;
            for (int r = 0; r < n; r += PAIR_ROWS_PER_PASS) {
                int rows = Math.min(PAIR_ROWS_PER_PASS, n - r);
                if (rows > ROWS_PER_PASS) {
                    dotQ8x8(w, base, x, r * k, rows, k, acc);
                } else {
                    dotQ8x4(w, base, x, r * k, rows, k, acc);
                }
                for (int i = 0; i < rows; i++) {
                    out.put((r + i) * m + j, acc[i]);
                }
            }
        }
    }

    /** Byte phase 0 (the lowest byte of every lane, sign-extended) of a block of 8-bit weights as F32, times {@code scale}. */
    private static FloatVector q8Phase0(IntVector v, FloatVector scale) {
        return ((FloatVector) v.lanewise(LSHL, 24).lanewise(ASHR, 24).convertShape(I2F, Q8_FLOATS, 0)).mul(scale);
    }

    /** Byte phase 1 of a block of 8-bit weights as F32, times {@code scale}. */
    private static FloatVector q8Phase1(IntVector v, FloatVector scale) {
        return ((FloatVector) v.lanewise(LSHL, 16).lanewise(ASHR, 24).convertShape(I2F, Q8_FLOATS, 0)).mul(scale);
    }

    /** Byte phase 2 of a block of 8-bit weights as F32, times {@code scale}. */
    private static FloatVector q8Phase2(IntVector v, FloatVector scale) {
        return ((FloatVector) v.lanewise(LSHL, 8).lanewise(ASHR, 24).convertShape(I2F, Q8_FLOATS, 0)).mul(scale);
    }

    /** Byte phase 3 (the highest byte of every lane) of a block of 8-bit weights as F32, times {@code scale}. */
    private static FloatVector q8Phase3(IntVector v, FloatVector scale) {
        return ((FloatVector) v.lanewise(ASHR, 24).convertShape(I2F, Q8_FLOATS, 0)).mul(scale);
    }

    /** One 8-bit weight row against {@code rows} (1 to 4) input rows {@code k} apart from {@code x0}, permuted by {@link #prepare}. */
    private static void dotQ8x4(ByteBuffer w, int base, float[] x, int x0, int rows, int k, float[] acc) {
        int blocks = k / BlockQ8.BLOCK;
        int scales = base + k;
        int x1 = rows > 1 ? x0 + k : x0;
        int x2 = rows > 2 ? x1 + k : x1;
        int x3 = rows > 3 ? x2 + k : x2;
        FloatVector a0 = FloatVector.zero(Q8_FLOATS);
        FloatVector a1 = FloatVector.zero(Q8_FLOATS);
        FloatVector a2 = FloatVector.zero(Q8_FLOATS);
        FloatVector a3 = FloatVector.zero(Q8_FLOATS);
        for (int b = 0; b < blocks; b++) {
            int e = b * BlockQ8.BLOCK;
            IntVector v = IntVector.fromByteBuffer(Q8_INTS, w, base + e, LE);
            FloatVector scale = FloatVector.broadcast(Q8_FLOATS, w.getFloat(scales + b * Float.BYTES));
            FloatVector w0 = q8Phase0(v, scale);
            FloatVector w1 = q8Phase1(v, scale);
            FloatVector w2 = q8Phase2(v, scale);
            FloatVector w3 = q8Phase3(v, scale);
            int o0 = e;
            a0 = w0.fma(FloatVector.fromArray(Q8_FLOATS, x, x0 + o0), a0);
            a1 = w0.fma(FloatVector.fromArray(Q8_FLOATS, x, x1 + o0), a1);
            a2 = w0.fma(FloatVector.fromArray(Q8_FLOATS, x, x2 + o0), a2);
            a3 = w0.fma(FloatVector.fromArray(Q8_FLOATS, x, x3 + o0), a3);
            int o1 = e + 1 * Q8_L;
            a0 = w1.fma(FloatVector.fromArray(Q8_FLOATS, x, x0 + o1), a0);
            a1 = w1.fma(FloatVector.fromArray(Q8_FLOATS, x, x1 + o1), a1);
            a2 = w1.fma(FloatVector.fromArray(Q8_FLOATS, x, x2 + o1), a2);
            a3 = w1.fma(FloatVector.fromArray(Q8_FLOATS, x, x3 + o1), a3);
            int o2 = e + 2 * Q8_L;
            a0 = w2.fma(FloatVector.fromArray(Q8_FLOATS, x, x0 + o2), a0);
            a1 = w2.fma(FloatVector.fromArray(Q8_FLOATS, x, x1 + o2), a1);
            a2 = w2.fma(FloatVector.fromArray(Q8_FLOATS, x, x2 + o2), a2);
            a3 = w2.fma(FloatVector.fromArray(Q8_FLOATS, x, x3 + o2), a3);
            int o3 = e + 3 * Q8_L;
            a0 = w3.fma(FloatVector.fromArray(Q8_FLOATS, x, x0 + o3), a0);
            a1 = w3.fma(FloatVector.fromArray(Q8_FLOATS, x, x1 + o3), a1);
            a2 = w3.fma(FloatVector.fromArray(Q8_FLOATS, x, x2 + o3), a2);
            a3 = w3.fma(FloatVector.fromArray(Q8_FLOATS, x, x3 + o3), a3);
        }
        store(acc, rows, a0.reduceLanes(ADD), a1.reduceLanes(ADD), a2.reduceLanes(ADD), a3.reduceLanes(ADD));
    }

    /** One 8-bit weight row against {@code rows} (5 to 8) input rows {@code k} apart from {@code x0}, permuted by {@link #prepare}. */
    private static void dotQ8x8(ByteBuffer w, int base, float[] x, int x0, int rows, int k, float[] acc) {
        int blocks = k / BlockQ8.BLOCK;
        int scales = base + k;
        int x1 = x0 + k;
        int x2 = x1 + k;
        int x3 = x2 + k;
        int x4 = x3 + k;
        int x5 = rows > 5 ? x4 + k : x4;
        int x6 = rows > 6 ? x5 + k : x5;
        int x7 = rows > 7 ? x6 + k : x6;
        FloatVector a0 = FloatVector.zero(Q8_FLOATS);
        FloatVector a1 = FloatVector.zero(Q8_FLOATS);
        FloatVector a2 = FloatVector.zero(Q8_FLOATS);
        FloatVector a3 = FloatVector.zero(Q8_FLOATS);
        FloatVector a4 = FloatVector.zero(Q8_FLOATS);
        FloatVector a5 = FloatVector.zero(Q8_FLOATS);
        FloatVector a6 = FloatVector.zero(Q8_FLOATS);
        FloatVector a7 = FloatVector.zero(Q8_FLOATS);
        for (int b = 0; b < blocks; b++) {
            int e = b * BlockQ8.BLOCK;
            IntVector v = IntVector.fromByteBuffer(Q8_INTS, w, base + e, LE);
            FloatVector scale = FloatVector.broadcast(Q8_FLOATS, w.getFloat(scales + b * Float.BYTES));
            FloatVector w0 = q8Phase0(v, scale);
            FloatVector w1 = q8Phase1(v, scale);
            FloatVector w2 = q8Phase2(v, scale);
            FloatVector w3 = q8Phase3(v, scale);
            int o0 = e;
            a0 = w0.fma(FloatVector.fromArray(Q8_FLOATS, x, x0 + o0), a0);
            a1 = w0.fma(FloatVector.fromArray(Q8_FLOATS, x, x1 + o0), a1);
            a2 = w0.fma(FloatVector.fromArray(Q8_FLOATS, x, x2 + o0), a2);
            a3 = w0.fma(FloatVector.fromArray(Q8_FLOATS, x, x3 + o0), a3);
            a4 = w0.fma(FloatVector.fromArray(Q8_FLOATS, x, x4 + o0), a4);
            a5 = w0.fma(FloatVector.fromArray(Q8_FLOATS, x, x5 + o0), a5);
            a6 = w0.fma(FloatVector.fromArray(Q8_FLOATS, x, x6 + o0), a6);
            a7 = w0.fma(FloatVector.fromArray(Q8_FLOATS, x, x7 + o0), a7);
            int o1 = e + 1 * Q8_L;
            a0 = w1.fma(FloatVector.fromArray(Q8_FLOATS, x, x0 + o1), a0);
            a1 = w1.fma(FloatVector.fromArray(Q8_FLOATS, x, x1 + o1), a1);
            a2 = w1.fma(FloatVector.fromArray(Q8_FLOATS, x, x2 + o1), a2);
            a3 = w1.fma(FloatVector.fromArray(Q8_FLOATS, x, x3 + o1), a3);
            a4 = w1.fma(FloatVector.fromArray(Q8_FLOATS, x, x4 + o1), a4);
            a5 = w1.fma(FloatVector.fromArray(Q8_FLOATS, x, x5 + o1), a5);
            a6 = w1.fma(FloatVector.fromArray(Q8_FLOATS, x, x6 + o1), a6);
            a7 = w1.fma(FloatVector.fromArray(Q8_FLOATS, x, x7 + o1), a7);
            int o2 = e + 2 * Q8_L;
            a0 = w2.fma(FloatVector.fromArray(Q8_FLOATS, x, x0 + o2), a0);
            a1 = w2.fma(FloatVector.fromArray(Q8_FLOATS, x, x1 + o2), a1);
            a2 = w2.fma(FloatVector.fromArray(Q8_FLOATS, x, x2 + o2), a2);
            a3 = w2.fma(FloatVector.fromArray(Q8_FLOATS, x, x3 + o2), a3);
            a4 = w2.fma(FloatVector.fromArray(Q8_FLOATS, x, x4 + o2), a4);
            a5 = w2.fma(FloatVector.fromArray(Q8_FLOATS, x, x5 + o2), a5);
            a6 = w2.fma(FloatVector.fromArray(Q8_FLOATS, x, x6 + o2), a6);
            a7 = w2.fma(FloatVector.fromArray(Q8_FLOATS, x, x7 + o2), a7);
            int o3 = e + 3 * Q8_L;
            a0 = w3.fma(FloatVector.fromArray(Q8_FLOATS, x, x0 + o3), a0);
            a1 = w3.fma(FloatVector.fromArray(Q8_FLOATS, x, x1 + o3), a1);
            a2 = w3.fma(FloatVector.fromArray(Q8_FLOATS, x, x2 + o3), a2);
            a3 = w3.fma(FloatVector.fromArray(Q8_FLOATS, x, x3 + o3), a3);
            a4 = w3.fma(FloatVector.fromArray(Q8_FLOATS, x, x4 + o3), a4);
            a5 = w3.fma(FloatVector.fromArray(Q8_FLOATS, x, x5 + o3), a5);
            a6 = w3.fma(FloatVector.fromArray(Q8_FLOATS, x, x6 + o3), a6);
            a7 = w3.fma(FloatVector.fromArray(Q8_FLOATS, x, x7 + o3), a7);
        }
        store8(acc, rows, a0.reduceLanes(ADD), a1.reduceLanes(ADD), a2.reduceLanes(ADD), a3.reduceLanes(ADD),
                a4.reduceLanes(ADD), a5.reduceLanes(ADD), a6.reduceLanes(ADD), a7.reduceLanes(ADD));
    }

    /**
     * {@link #project} of F32 weights for several input rows, where the arithmetic rather than the weights' bytes bounds
     * the rate: two weight rows at a time against up to 4 input rows, so each input vector loaded serves two
     * multiply-adds (eight accumulators in registers).
     */
    private static void projectF32Pairs(ByteBuffer w, int rowBytes, float[] x, int n, int k, FloatBuffer out, int m, int from, int to,
                                        float[] acc) {
        float[] first = new float[PAIR_ROWS_PER_PASS];
        float[] second = new float[PAIR_ROWS_PER_PASS];
        int j = from;
        for (; j + 1 < to; j += 2) {
            int base = j * rowBytes;
            for (int r = 0; r < n; r += PAIR_ROWS_PER_PASS) {
                int rows = Math.min(PAIR_ROWS_PER_PASS, n - r);
                if (rows > ROWS_PER_PASS) {
                    dotF32Pair8(w, base, base + rowBytes, x, r * k, rows, k, first, second);
                } else {
                    dotF32Pair(w, base, base + rowBytes, x, r * k, rows, k, first, second);
                }
                for (int i = 0; i < rows; i++) {
                    out.put((r + i) * m + j, first[i]);
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
        store(accA, rows, a0.reduceLanes(ADD), a1.reduceLanes(ADD),
                a2.reduceLanes(ADD), a3.reduceLanes(ADD));
        store(accB, rows, b0.reduceLanes(ADD), b1.reduceLanes(ADD),
                b2.reduceLanes(ADD), b3.reduceLanes(ADD));
        tails(w, baseA, false, x, x0, k, i, rows, accA);
        tails(w, baseB, false, x, x0, k, i, rows, accB);
    }

    /**
     * Two F32 weight rows against {@code rows} (5 to 8) input rows {@code k} apart from {@code x0}: sixteen accumulators,
     * so each weight vector loaded serves eight multiply-adds (the four-row kernel loads each weight vector twice for
     * eight rows, and measured about 1.6x slower than this one on weights in cache).
     */
    private static void dotF32Pair8(ByteBuffer w, int baseA, int baseB, float[] x, int x0, int rows, int k, float[] accA, float[] accB) {
        FloatVector a0 = FloatVector.zero(FLOATS);
        FloatVector a1 = FloatVector.zero(FLOATS);
        FloatVector a2 = FloatVector.zero(FLOATS);
        FloatVector a3 = FloatVector.zero(FLOATS);
        FloatVector a4 = FloatVector.zero(FLOATS);
        FloatVector a5 = FloatVector.zero(FLOATS);
        FloatVector a6 = FloatVector.zero(FLOATS);
        FloatVector a7 = FloatVector.zero(FLOATS);
        FloatVector b0 = FloatVector.zero(FLOATS);
        FloatVector b1 = FloatVector.zero(FLOATS);
        FloatVector b2 = FloatVector.zero(FLOATS);
        FloatVector b3 = FloatVector.zero(FLOATS);
        FloatVector b4 = FloatVector.zero(FLOATS);
        FloatVector b5 = FloatVector.zero(FLOATS);
        FloatVector b6 = FloatVector.zero(FLOATS);
        FloatVector b7 = FloatVector.zero(FLOATS);
        int x1 = x0 + k;
        int x2 = x1 + k;
        int x3 = x2 + k;
        int x4 = x3 + k;
        int x5 = rows > 5 ? x4 + k : x4;
        int x6 = rows > 6 ? x5 + k : x5;
        int x7 = rows > 7 ? x6 + k : x6;
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
            v = FloatVector.fromArray(FLOATS, x, x4 + i);
            a4 = wa.fma(v, a4);
            b4 = wb.fma(v, b4);
            v = FloatVector.fromArray(FLOATS, x, x5 + i);
            a5 = wa.fma(v, a5);
            b5 = wb.fma(v, b5);
            v = FloatVector.fromArray(FLOATS, x, x6 + i);
            a6 = wa.fma(v, a6);
            b6 = wb.fma(v, b6);
            v = FloatVector.fromArray(FLOATS, x, x7 + i);
            a7 = wa.fma(v, a7);
            b7 = wb.fma(v, b7);
        }
        store8(accA, rows, a0.reduceLanes(ADD), a1.reduceLanes(ADD), a2.reduceLanes(ADD), a3.reduceLanes(ADD),
                a4.reduceLanes(ADD), a5.reduceLanes(ADD), a6.reduceLanes(ADD), a7.reduceLanes(ADD));
        store8(accB, rows, b0.reduceLanes(ADD), b1.reduceLanes(ADD), b2.reduceLanes(ADD), b3.reduceLanes(ADD),
                b4.reduceLanes(ADD), b5.reduceLanes(ADD), b6.reduceLanes(ADD), b7.reduceLanes(ADD));
        tails(w, baseA, false, x, x0, k, i, rows, accA);
        tails(w, baseB, false, x, x0, k, i, rows, accB);
    }

    /** One F32 weight row against one input row: {@code Σ_i w[base/4 + i]·x[x0 + i]} over {@code i < k}. */
    private static float dotF32Row(ByteBuffer w, int base, float[] x, int x0, int k) {
        int i = 0;
        FloatVector a0 = FloatVector.zero(ROW_FLOATS);
        FloatVector a1 = FloatVector.zero(ROW_FLOATS);
        FloatVector a2 = FloatVector.zero(ROW_FLOATS);
        FloatVector a3 = FloatVector.zero(ROW_FLOATS);
        for (; i + 4 * RL <= k; i += 4 * RL) {
            int b = base + 4 * i;
            a0 = FloatVector.fromByteBuffer(ROW_FLOATS, w, b, LE).fma(FloatVector.fromArray(ROW_FLOATS, x, x0 + i), a0);
            a1 = FloatVector.fromByteBuffer(ROW_FLOATS, w, b + 4 * RL, LE).fma(FloatVector.fromArray(ROW_FLOATS, x, x0 + i + RL), a1);
            a2 = FloatVector.fromByteBuffer(ROW_FLOATS, w, b + 8 * RL, LE).fma(FloatVector.fromArray(ROW_FLOATS, x, x0 + i + 2 * RL), a2);
            a3 = FloatVector.fromByteBuffer(ROW_FLOATS, w, b + 12 * RL, LE).fma(FloatVector.fromArray(ROW_FLOATS, x, x0 + i + 3 * RL), a3);
        }
        for (; i + RL <= k; i += RL) {
            a0 = FloatVector.fromByteBuffer(ROW_FLOATS, w, base + 4 * i, LE).fma(FloatVector.fromArray(ROW_FLOATS, x, x0 + i), a0);
        }
        return a0.add(a1).add(a2.add(a3)).reduceLanes(ADD) + tail(w, base, false, x, x0, i, k);
    }

    /** One F32 weight row against {@code rows} (1 to 4) input rows {@code k} apart from {@code x0}. */
    private static void dotF32(ByteBuffer w, int base, float[] x, int x0, int rows, int k, float[] acc) {
        int i = 0;
        FloatVector a0 = FloatVector.zero(FLOATS);
        FloatVector a1 = FloatVector.zero(FLOATS);
        FloatVector a2 = FloatVector.zero(FLOATS);
        FloatVector a3 = FloatVector.zero(FLOATS);
        int x1 = rows > 1 ? x0 + k : x0;
        int x2 = rows > 2 ? x1 + k : x1;
        int x3 = rows > 3 ? x2 + k : x2;
        for (; i + L <= k; i += L) {
            FloatVector wv = FloatVector.fromByteBuffer(FLOATS, w, base + 4 * i, LE);
            a0 = wv.fma(FloatVector.fromArray(FLOATS, x, x0 + i), a0);
            a1 = wv.fma(FloatVector.fromArray(FLOATS, x, x1 + i), a1);
            a2 = wv.fma(FloatVector.fromArray(FLOATS, x, x2 + i), a2);
            a3 = wv.fma(FloatVector.fromArray(FLOATS, x, x3 + i), a3);
        }
        store(acc, rows, a0.reduceLanes(ADD), a1.reduceLanes(ADD),
                a2.reduceLanes(ADD), a3.reduceLanes(ADD));
        tails(w, base, false, x, x0, k, i, rows, acc);
    }

    /** One BF16 weight row against one input row permuted by {@link #prepare}. */
    private static float dotBf16Row(ByteBuffer w, int base, float[] x, int k) {
        int i = 0;
        FloatVector a0 = FloatVector.zero(FLOATS);
        FloatVector a1 = FloatVector.zero(FLOATS);
        FloatVector a2 = FloatVector.zero(FLOATS);
        FloatVector a3 = FloatVector.zero(FLOATS);
        for (; i + 4 * L <= k; i += 4 * L) {
            IntVector p = IntVector.fromByteBuffer(INTS, w, base + 2 * i, LE);
            IntVector q = IntVector.fromByteBuffer(INTS, w, base + 2 * i + 4 * L, LE);
            a0 = ((FloatVector) p.lanewise(LSHL, 16).reinterpretShape(FLOATS, 0)).fma(FloatVector.fromArray(FLOATS, x, i), a0);
            a1 = ((FloatVector) p.lanewise(AND, 0xFFFF0000).reinterpretShape(FLOATS, 0)).fma(FloatVector.fromArray(FLOATS, x, i + L), a1);
            a2 = ((FloatVector) q.lanewise(LSHL, 16).reinterpretShape(FLOATS, 0)).fma(FloatVector.fromArray(FLOATS, x, i + 2 * L), a2);
            a3 = ((FloatVector) q.lanewise(AND, 0xFFFF0000).reinterpretShape(FLOATS, 0))
                    .fma(FloatVector.fromArray(FLOATS, x, i + 3 * L), a3);
        }
        for (; i + 2 * L <= k; i += 2 * L) {
            IntVector p = IntVector.fromByteBuffer(INTS, w, base + 2 * i, LE);
            a0 = ((FloatVector) p.lanewise(LSHL, 16).reinterpretShape(FLOATS, 0)).fma(FloatVector.fromArray(FLOATS, x, i), a0);
            a1 = ((FloatVector) p.lanewise(AND, 0xFFFF0000).reinterpretShape(FLOATS, 0)).fma(FloatVector.fromArray(FLOATS, x, i + L), a1);
        }
        return a0.add(a1).add(a2.add(a3)).reduceLanes(ADD) + tail(w, base, true, x, 0, i, k);
    }

    /** One BF16 weight row against {@code rows} (1 to 4) input rows permuted by {@link #prepare}. */
    private static void dotBf16(ByteBuffer w, int base, float[] x, int x0, int rows, int k, float[] acc) {
        int i = 0;
        FloatVector a0 = FloatVector.zero(FLOATS);
        FloatVector a1 = FloatVector.zero(FLOATS);
        FloatVector a2 = FloatVector.zero(FLOATS);
        FloatVector a3 = FloatVector.zero(FLOATS);
        int x1 = rows > 1 ? x0 + k : x0;
        int x2 = rows > 2 ? x1 + k : x1;
        int x3 = rows > 3 ? x2 + k : x2;
        for (; i + 2 * L <= k; i += 2 * L) {
            IntVector p = IntVector.fromByteBuffer(INTS, w, base + 2 * i, LE);
            FloatVector e = (FloatVector) p.lanewise(LSHL, 16).reinterpretShape(FLOATS, 0);
            FloatVector o = (FloatVector) p.lanewise(AND, 0xFFFF0000).reinterpretShape(FLOATS, 0);
            a0 = o.fma(FloatVector.fromArray(FLOATS, x, x0 + i + L), e.fma(FloatVector.fromArray(FLOATS, x, x0 + i), a0));
            a1 = o.fma(FloatVector.fromArray(FLOATS, x, x1 + i + L), e.fma(FloatVector.fromArray(FLOATS, x, x1 + i), a1));
            a2 = o.fma(FloatVector.fromArray(FLOATS, x, x2 + i + L), e.fma(FloatVector.fromArray(FLOATS, x, x2 + i), a2));
            a3 = o.fma(FloatVector.fromArray(FLOATS, x, x3 + i + L), e.fma(FloatVector.fromArray(FLOATS, x, x3 + i), a3));
        }
        store(acc, rows, a0.reduceLanes(ADD), a1.reduceLanes(ADD),
                a2.reduceLanes(ADD), a3.reduceLanes(ADD));
        tails(w, base, true, x, x0, k, i, rows, acc);
    }

    /**
     * One BF16 weight row against {@code rows} (5 to 8) input rows permuted by {@link #prepare}: each pair of weight vectors
     * widened once for all of them, eight accumulators in registers.
     */
    private static void dotBf16x8(ByteBuffer w, int base, float[] x, int x0, int rows, int k, float[] acc) {
        int i = 0;
        FloatVector a0 = FloatVector.zero(FLOATS);
        FloatVector a1 = FloatVector.zero(FLOATS);
        FloatVector a2 = FloatVector.zero(FLOATS);
        FloatVector a3 = FloatVector.zero(FLOATS);
        FloatVector a4 = FloatVector.zero(FLOATS);
        FloatVector a5 = FloatVector.zero(FLOATS);
        FloatVector a6 = FloatVector.zero(FLOATS);
        FloatVector a7 = FloatVector.zero(FLOATS);
        int x1 = x0 + k;
        int x2 = x1 + k;
        int x3 = x2 + k;
        int x4 = x3 + k;
        int x5 = rows > 5 ? x4 + k : x4;
        int x6 = rows > 6 ? x5 + k : x5;
        int x7 = rows > 7 ? x6 + k : x6;
        for (; i + 2 * L <= k; i += 2 * L) {
            IntVector p = IntVector.fromByteBuffer(INTS, w, base + 2 * i, LE);
            FloatVector e = (FloatVector) p.lanewise(LSHL, 16).reinterpretShape(FLOATS, 0);
            FloatVector o = (FloatVector) p.lanewise(AND, 0xFFFF0000).reinterpretShape(FLOATS, 0);
            a0 = o.fma(FloatVector.fromArray(FLOATS, x, x0 + i + L), e.fma(FloatVector.fromArray(FLOATS, x, x0 + i), a0));
            a1 = o.fma(FloatVector.fromArray(FLOATS, x, x1 + i + L), e.fma(FloatVector.fromArray(FLOATS, x, x1 + i), a1));
            a2 = o.fma(FloatVector.fromArray(FLOATS, x, x2 + i + L), e.fma(FloatVector.fromArray(FLOATS, x, x2 + i), a2));
            a3 = o.fma(FloatVector.fromArray(FLOATS, x, x3 + i + L), e.fma(FloatVector.fromArray(FLOATS, x, x3 + i), a3));
            a4 = o.fma(FloatVector.fromArray(FLOATS, x, x4 + i + L), e.fma(FloatVector.fromArray(FLOATS, x, x4 + i), a4));
            a5 = o.fma(FloatVector.fromArray(FLOATS, x, x5 + i + L), e.fma(FloatVector.fromArray(FLOATS, x, x5 + i), a5));
            a6 = o.fma(FloatVector.fromArray(FLOATS, x, x6 + i + L), e.fma(FloatVector.fromArray(FLOATS, x, x6 + i), a6));
            a7 = o.fma(FloatVector.fromArray(FLOATS, x, x7 + i + L), e.fma(FloatVector.fromArray(FLOATS, x, x7 + i), a7));
        }
        store8(acc, rows, a0.reduceLanes(ADD), a1.reduceLanes(ADD), a2.reduceLanes(ADD), a3.reduceLanes(ADD),
                a4.reduceLanes(ADD), a5.reduceLanes(ADD), a6.reduceLanes(ADD), a7.reduceLanes(ADD));
        if (i < k) {
            for (int r = 0; r < rows; r++) {
                acc[r] += tail(w, base, true, x, x0 + r * k, i, k);
            }
        }
    }

    /** The elements {@code [i, k)} that no whole vector covered, of one weight row and one input row. */
    private static float tail(ByteBuffer w, int base, boolean bf16, float[] x, int x0, int i, int k) {
        float total = 0f;
        for (; i < k; i++) {
            total += (bf16 ? Float.intBitsToFloat(w.getShort(base + 2 * i) << 16) : w.getFloat(base + 4 * i)) * x[x0 + i];
        }
        return total;
    }

    /** {@link #tail} added to {@code acc[0, rows)} for up to 4 input rows {@code k} apart from {@code x0}. */
    private static void tails(ByteBuffer w, int base, boolean bf16, float[] x, int x0, int k, int i, int rows, float[] acc) {
        if (i < k) {
            for (int r = 0; r < rows; r++) {
                acc[r] += tail(w, base, bf16, x, x0 + r * k, i, k);
            }
        }
    }

    /**
     * One 8-bit weight row (blocks of 32, scales after the row's bytes) against one input row permuted by
     * {@link #prepare}: per vector, byte phase {@code p} of every lane times the input's phase {@code p}, summed, then
     * times each block's scale. Rows {@code [from, to)}, {@code rowBytes} apart, into {@code out[from, to)}.
     *
     * <p>The loop over the rows is in here, so that this method is the root of its own compilation and never inlined
     * into a caller: its 329 bytes of bytecode exceed what C2 inlines at a hot call site ({@code FreqInlineSize}, 325
     * by default); keep it above that. Inlined into the one-row dispatcher next to the F32 and BF16 kernels (which
     * happened or not depending on which compiled first), it left the caller's budget short for the scale's
     * {@code getFloat}, which then ran as a call per block: about 40% of a q8 decode step's samples in such runs.
     */
    private static void dotQ8Rows(ByteBuffer w, int rowBytes, float[] x, int k, FloatBuffer out, int from, int to) {
        int blocks = k / BlockQ8.BLOCK;
        for (int j = from; j < to; j++) {
            int base = j * rowBytes;
            int scales = base + k;
            // one block an iteration, one accumulator (its chain is one FMA of the ~16 vector operations of a block):
            // the smallest compiled loop, so the JIT's node budget never cuts the Vector API calls it must inline
            FloatVector t = FloatVector.zero(Q8_FLOATS);
            for (int b = 0; b < blocks; b++) {
                int e = b * BlockQ8.BLOCK;
                IntVector v = IntVector.fromByteBuffer(Q8_INTS, w, base + e, LE);
                FloatVector w0 = (FloatVector) v.lanewise(LSHL, 24).lanewise(ASHR, 24)
                        .convertShape(I2F, Q8_FLOATS, 0);
                FloatVector w1 = (FloatVector) v.lanewise(LSHL, 16).lanewise(ASHR, 24)
                        .convertShape(I2F, Q8_FLOATS, 0);
                FloatVector w2 = (FloatVector) v.lanewise(LSHL, 8).lanewise(ASHR, 24)
                        .convertShape(I2F, Q8_FLOATS, 0);
                FloatVector w3 = (FloatVector) v.lanewise(ASHR, 24).convertShape(I2F, Q8_FLOATS, 0);
                FloatVector s = w0.mul(FloatVector.fromArray(Q8_FLOATS, x, e));
                s = w1.fma(FloatVector.fromArray(Q8_FLOATS, x, e + Q8_L), s);
                s = w2.fma(FloatVector.fromArray(Q8_FLOATS, x, e + 2 * Q8_L), s);
                s = w3.fma(FloatVector.fromArray(Q8_FLOATS, x, e + 3 * Q8_L), s);
                t = s.fma(FloatVector.broadcast(Q8_FLOATS, w.getFloat(scales + b * Float.BYTES)), t);
            }
            out.put(j, t.reduceLanes(ADD));
        }
    }

    /** The first {@code rows} (5 to 8) of the eight sums into {@code acc}. */
    private static void store8(float[] acc, int rows, float s0, float s1, float s2, float s3, float s4, float s5, float s6, float s7) {
        acc[0] = s0;
        acc[1] = s1;
        acc[2] = s2;
        acc[3] = s3;
        acc[4] = s4;
        if (rows > 5) {
            acc[5] = s5;
        }
        if (rows > 6) {
            acc[6] = s6;
        }
        if (rows > 7) {
            acc[7] = s7;
        }
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
