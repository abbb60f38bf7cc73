package io.graphlane.backend.cpu.nn;

import static jdk.incubator.vector.VectorOperators.ADD;
import static jdk.incubator.vector.VectorOperators.EXP;
import static jdk.incubator.vector.VectorOperators.MAX;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;

/**
 * Attention of one query row over one key/value head's cache rows with the Vector API, for
 * {@link CpuNeuralOps#attention}: the scores of the head's group of query heads against every key row the query
 * sees, a softmax per query head, then the weighted sum of the value rows, all reading the cache in place.
 *
 * <p>This replaces two OpenBLAS {@code sgemm}s per head and row, which for these shapes (a few query heads, one
 * head's width) spent most of their time packing the cache rows into OpenBLAS's layout: about half the time per call
 * at a few dozen to a thousand cache rows. Each key and value row is read once per call and serves the whole group.
 * The scores take two key rows and up to four query heads per pass, and the weighted sum four vectors of a value row
 * per pass, so independent multiply-adds fill the core; one dot product at a time, each ending in a horizontal sum,
 * ran the whole call 2-2.6 times slower (12/4 heads of 64, 150 and 1000 cache rows, one thread, this machine).
 *
 * <p>Loaded only when the JVM runs with {@code --add-modules jdk.incubator.vector} ({@link PackedKernels#VECTOR}).
 */
final class VectorAttention {
    private static final VectorSpecies<Float> FLOATS = VectorKernels.BITS == 512 ? FloatVector.SPECIES_512 : FloatVector.SPECIES_256;
    private static final int L = FLOATS.length();
    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
    /** Per thread: the group's scaled queries, then its scores, then its outputs. */
    private static final ThreadLocal<float[]> SCRATCH = ThreadLocal.withInitial(() -> new float[0]);

    private VectorAttention() {
    }

    /**
     * Writes {@code out[outBase + g·headDim + d]} for the {@code group} query heads {@code g} read from
     * {@code queries[queryBase + g·headDim + d]}: softmax over the rows {@code t < seen} of {@code scale · q_g·k_t}
     * (soft-capped to {@code softcap · tanh(score / softcap)} when {@code softcap > 0}),
     * applied to the rows {@code v_t}, where key and value row {@code t} start at float {@code t·kvWidth + kvOffset}
     * of {@code keys} and {@code values} (little-endian bytes of the cache).
     */
    static void attend(FloatBuffer queries, int queryBase, int group, int headDim, float scale, float softcap,
                       ByteBuffer keys, ByteBuffer values, int kvWidth, int kvOffset, int seen,
                       FloatBuffer out, int outBase) {
        int width = group * headDim;
        float[] s = scratch(2 * width + group * seen);
        int scoresAt = width;
        int resultAt = width + group * seen;
        for (int i = 0; i < width; i++) {
            s[i] = queries.get(queryBase + i) * scale;
        }
        for (int g0 = 0; g0 < group; g0 += 4) {
            scores(s, g0, Math.min(4, group - g0), headDim, keys, kvWidth, kvOffset, seen, scoresAt);
        }
        if (softcap > 0) {
            for (int i = scoresAt; i < scoresAt + group * seen; i++) {
                s[i] = CpuNeuralOps.capped(s[i], softcap);
            }
        }
        for (int g = 0; g < group; g++) {
            softmax(s, scoresAt + g * seen, seen);
        }
        int d = 0;
        for (; d + 4 * L <= headDim; d += 4 * L) {
            for (int g = 0; g < group; g++) {
                weighted4(values, kvWidth, kvOffset + d, seen, s, scoresAt + g * seen, resultAt + g * headDim + d);
            }
        }
        for (; d + L <= headDim; d += L) {
            for (int g = 0; g < group; g++) {
                weighted(values, kvWidth, kvOffset + d, seen, s, scoresAt + g * seen, resultAt + g * headDim + d);
            }
        }
        for (; d < headDim; d++) {
            for (int g = 0; g < group; g++) {
                int row = scoresAt + g * seen;
                float acc = 0f;
                for (int t = 0; t < seen; t++) {
                    acc += s[row + t] * values.getFloat(4 * (t * kvWidth + kvOffset + d));
                }
                s[resultAt + g * headDim + d] = acc;
            }
        }
        out.put(outBase, s, resultAt, width);
    }

    /**
     * {@code s[scoresAt + g·seen + t] = q_g · k_t} for the {@code heads} (1 to 4) query heads {@code g} from {@code g0},
     * their queries at {@code s[g·headDim]}, over every key row {@code t < seen}: two key rows per pass, each key vector
     * loaded once for every head, eight independent sums in flight. One row and one head at a time, the horizontal sum
     * ending each dot product left the core waiting: measured about three times slower (12 heads of 64 over 150 rows).
     * A last partial set of heads repeats its last head and a last odd row repeats itself; neither is stored twice.
     */
    private static void scores(float[] s, int g0, int heads, int headDim, ByteBuffer keys, int kvWidth, int kvOffset,
                               int seen, int scoresAt) {
        int q0 = g0 * headDim;
        int q1 = (g0 + Math.min(1, heads - 1)) * headDim;
        int q2 = (g0 + Math.min(2, heads - 1)) * headDim;
        int q3 = (g0 + Math.min(3, heads - 1)) * headDim;
        int s0 = scoresAt + g0 * seen;
        int vectorDims = headDim / L * L;
        for (int t = 0; t < seen; t += 2) {
            boolean pair = t + 1 < seen;
            int r0 = 4 * (t * kvWidth + kvOffset);
            int r1 = pair ? r0 + 4 * kvWidth : r0;
            FloatVector a0 = FloatVector.zero(FLOATS);
            FloatVector a1 = FloatVector.zero(FLOATS);
            FloatVector a2 = FloatVector.zero(FLOATS);
            FloatVector a3 = FloatVector.zero(FLOATS);
            FloatVector b0 = FloatVector.zero(FLOATS);
            FloatVector b1 = FloatVector.zero(FLOATS);
            FloatVector b2 = FloatVector.zero(FLOATS);
            FloatVector b3 = FloatVector.zero(FLOATS);
            for (int d = 0; d < vectorDims; d += L) {
                FloatVector k0 = FloatVector.fromByteBuffer(FLOATS, keys, r0 + 4 * d, LE);
                FloatVector k1 = FloatVector.fromByteBuffer(FLOATS, keys, r1 + 4 * d, LE);
                FloatVector x0 = FloatVector.fromArray(FLOATS, s, q0 + d);
                FloatVector x1 = FloatVector.fromArray(FLOATS, s, q1 + d);
                FloatVector x2 = FloatVector.fromArray(FLOATS, s, q2 + d);
                FloatVector x3 = FloatVector.fromArray(FLOATS, s, q3 + d);
                a0 = k0.fma(x0, a0);
                a1 = k0.fma(x1, a1);
                a2 = k0.fma(x2, a2);
                a3 = k0.fma(x3, a3);
                b0 = k1.fma(x0, b0);
                b1 = k1.fma(x1, b1);
                b2 = k1.fma(x2, b2);
                b3 = k1.fma(x3, b3);
            }
            s[s0 + t] = a0.reduceLanes(ADD);
            if (heads > 1) {
                s[s0 + seen + t] = a1.reduceLanes(ADD);
            }
            if (heads > 2) {
                s[s0 + 2 * seen + t] = a2.reduceLanes(ADD);
            }
            if (heads > 3) {
                s[s0 + 3 * seen + t] = a3.reduceLanes(ADD);
            }
            if (pair) {
                s[s0 + t + 1] = b0.reduceLanes(ADD);
                if (heads > 1) {
                    s[s0 + seen + t + 1] = b1.reduceLanes(ADD);
                }
                if (heads > 2) {
                    s[s0 + 2 * seen + t + 1] = b2.reduceLanes(ADD);
                }
                if (heads > 3) {
                    s[s0 + 3 * seen + t + 1] = b3.reduceLanes(ADD);
                }
            }
        }
        if (vectorDims < headDim) {
            for (int t = 0; t < seen; t++) {
                int r = 4 * (t * kvWidth + kvOffset);
                for (int h = 0; h < heads; h++) {
                    int q = (g0 + h) * headDim;
                    float acc = 0f;
                    for (int d = vectorDims; d < headDim; d++) {
                        acc += keys.getFloat(r + 4 * d) * s[q + d];
                    }
                    s[s0 + h * seen + t] += acc;
                }
            }
        }
    }

    /**
     * {@code s[to, to + L) = Σ_t s[p + t] · v_t[column, column + L)} over {@code t < seen}, value row {@code t} starting at
     * float {@code t·kvWidth} of {@code v}.
     */
    private static void weighted(ByteBuffer v, int kvWidth, int column, int seen, float[] s, int p, int to) {
        FloatVector a0 = FloatVector.zero(FLOATS);
        FloatVector a1 = FloatVector.zero(FLOATS);
        int t = 0;
        for (; t + 2 <= seen; t += 2) {
            a0 = FloatVector.fromByteBuffer(FLOATS, v, 4 * (t * kvWidth + column), LE).fma(FloatVector.broadcast(FLOATS, s[p + t]), a0);
            a1 = FloatVector.fromByteBuffer(FLOATS, v, 4 * ((t + 1) * kvWidth + column), LE).fma(FloatVector.broadcast(FLOATS, s[p + t + 1]), a1);
        }
        if (t < seen) {
            a0 = FloatVector.fromByteBuffer(FLOATS, v, 4 * (t * kvWidth + column), LE).fma(FloatVector.broadcast(FLOATS, s[p + t]), a0);
        }
        a0.add(a1).intoArray(s, to);
    }

    /**
     * {@code s[to, to + 4L) = Σ_t s[p + t] · v_t[column, column + 4L)} over {@code t < seen}: four independent sums, so
     * the multiply-adds of one value row do not wait on each other.
     */
    private static void weighted4(ByteBuffer v, int kvWidth, int column, int seen, float[] s, int p, int to) {
        FloatVector a0 = FloatVector.zero(FLOATS);
        FloatVector a1 = FloatVector.zero(FLOATS);
        FloatVector a2 = FloatVector.zero(FLOATS);
        FloatVector a3 = FloatVector.zero(FLOATS);
        for (int t = 0; t < seen; t++) {
            int r = 4 * (t * kvWidth + column);
            FloatVector weight = FloatVector.broadcast(FLOATS, s[p + t]);
            a0 = FloatVector.fromByteBuffer(FLOATS, v, r, LE).fma(weight, a0);
            a1 = FloatVector.fromByteBuffer(FLOATS, v, r + 4 * L, LE).fma(weight, a1);
            a2 = FloatVector.fromByteBuffer(FLOATS, v, r + 8 * L, LE).fma(weight, a2);
            a3 = FloatVector.fromByteBuffer(FLOATS, v, r + 12 * L, LE).fma(weight, a3);
        }
        a0.intoArray(s, to);
        a1.intoArray(s, to + L);
        a2.intoArray(s, to + 2 * L);
        a3.intoArray(s, to + 3 * L);
    }

    /** Replaces {@code s[from, from + n)} by its softmax, the maximum subtracted first. */
    private static void softmax(float[] s, int from, int n) {
        int end = from + n;
        int vectorEnd = from + (n / L) * L;
        FloatVector most = FloatVector.broadcast(FLOATS, Float.NEGATIVE_INFINITY);
        for (int i = from; i < vectorEnd; i += L) {
            most = most.max(FloatVector.fromArray(FLOATS, s, i));
        }
        float max = most.reduceLanes(MAX);
        for (int i = vectorEnd; i < end; i++) {
            max = Math.max(max, s[i]);
        }
        FloatVector shift = FloatVector.broadcast(FLOATS, max);
        FloatVector sums = FloatVector.zero(FLOATS);
        for (int i = from; i < vectorEnd; i += L) {
            FloatVector e = FloatVector.fromArray(FLOATS, s, i).sub(shift).lanewise(EXP);
            e.intoArray(s, i);
            sums = sums.add(e);
        }
        float sum = sums.reduceLanes(ADD);
        for (int i = vectorEnd; i < end; i++) {
            float e = (float) Math.exp(s[i] - max);
            s[i] = e;
            sum += e;
        }
        float inverse = 1f / sum;
        for (int i = from; i < vectorEnd; i += L) {
            FloatVector.fromArray(FLOATS, s, i).mul(inverse).intoArray(s, i);
        }
        for (int i = vectorEnd; i < end; i++) {
            s[i] *= inverse;
        }
    }

    private static float[] scratch(int floats) {
        float[] s = SCRATCH.get();
        if (s.length < floats) {
            s = new float[Math.max(floats, 2 * s.length)];
            SCRATCH.set(s);
        }
        return s;
    }
}
