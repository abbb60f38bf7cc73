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
     * {@code queries[queryBase + g·headDim + d]}: softmax over the rows {@code t < seen} of {@code scale · q_g·k_t},
     * applied to the rows {@code v_t}, where key and value row {@code t} start at float {@code t·kvWidth + kvOffset}
     * of {@code keys} and {@code values} (little-endian bytes of the cache).
     */
    static void attend(FloatBuffer queries, int queryBase, int group, int headDim, float scale,
                       ByteBuffer keys, ByteBuffer values, int kvWidth, int kvOffset, int seen,
                       FloatBuffer out, int outBase) {
        int width = group * headDim;
        float[] s = scratch(2 * width + group * seen);
        int scoresAt = width;
        int resultAt = width + group * seen;
        for (int i = 0; i < width; i++) {
            s[i] = queries.get(queryBase + i) * scale;
        }
        for (int t = 0; t < seen; t++) {
            int base = 4 * (t * kvWidth + kvOffset);
            for (int g = 0; g < group; g++) {
                s[scoresAt + g * seen + t] = VectorKernels.dotF32Row(keys, base, s, g * headDim, headDim);
            }
        }
        for (int g = 0; g < group; g++) {
            softmax(s, scoresAt + g * seen, seen);
        }
        int d = 0;
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
