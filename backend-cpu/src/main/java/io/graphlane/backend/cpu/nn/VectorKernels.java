package io.graphlane.backend.cpu.nn;

import io.graphlane.checkpoint.recipe.BlockQ8;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * The SIMD form of {@link PackedKernels}' BF16 and 8-bit dot products, on the incubating Vector API: 8 weights
 * per step widened in registers (BF16: 16-bit lanes shifted into the top of 32-bit ones; int8: converted to
 * F32) and fused-multiply-added into two accumulators. Loaded only when the JVM runs with
 * {@code --add-modules jdk.incubator.vector} ({@link PackedKernels#VECTOR}); otherwise the scalar loops run.
 */
final class VectorKernels {
    private static final VectorSpecies<Float> FLOATS = FloatVector.SPECIES_256;
    private static final VectorSpecies<Integer> INTS = IntVector.SPECIES_256;
    private static final VectorSpecies<Short> HALVES = ShortVector.SPECIES_128;
    private static final VectorSpecies<Byte> BYTES = ByteVector.SPECIES_64;

    private VectorKernels() {
    }

    static float dotBf16(ByteBuffer w, int base, float[] x, int xBase, int k) {
        FloatVector a0 = FloatVector.zero(FLOATS);
        FloatVector a1 = FloatVector.zero(FLOATS);
        int i = 0;
        int limit = k - 15;
        for (; i < limit; i += 16) {
            a0 = widenBf16(w, base + 2 * i).fma(FloatVector.fromArray(FLOATS, x, xBase + i), a0);
            a1 = widenBf16(w, base + 2 * i + 16).fma(FloatVector.fromArray(FLOATS, x, xBase + i + 8), a1);
        }
        float sum = a0.add(a1).reduceLanes(VectorOperators.ADD);
        for (; i < k; i++) {
            sum += Float.intBitsToFloat(w.getShort(base + 2 * i) << 16) * x[xBase + i];
        }
        return sum;
    }

    private static FloatVector widenBf16(ByteBuffer w, int offset) {
        return ((IntVector) ShortVector.fromByteBuffer(HALVES, w, offset, ByteOrder.LITTLE_ENDIAN)
                .convertShape(VectorOperators.S2I, INTS, 0)).lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats();
    }

    static float dotQ8(ByteBuffer w, int base, float[] x, int xBase, int k) {
        int blocks = k / BlockQ8.BLOCK;
        int scales = base + k;
        FloatVector total = FloatVector.zero(FLOATS);
        for (int b = 0; b < blocks; b++) {
            int q = base + b * BlockQ8.BLOCK;
            int xi = xBase + b * BlockQ8.BLOCK;
            FloatVector s0 = widenQ8(w, q).mul(FloatVector.fromArray(FLOATS, x, xi));
            FloatVector s1 = widenQ8(w, q + 8).mul(FloatVector.fromArray(FLOATS, x, xi + 8));
            s0 = widenQ8(w, q + 16).fma(FloatVector.fromArray(FLOATS, x, xi + 16), s0);
            s1 = widenQ8(w, q + 24).fma(FloatVector.fromArray(FLOATS, x, xi + 24), s1);
            total = s0.add(s1).fma(FloatVector.broadcast(FLOATS, w.getFloat(scales + b * Float.BYTES)), total);
        }
        return total.reduceLanes(VectorOperators.ADD);
    }

    private static FloatVector widenQ8(ByteBuffer w, int offset) {
        return (FloatVector) ByteVector.fromByteBuffer(BYTES, w, offset, ByteOrder.LITTLE_ENDIAN).convertShape(VectorOperators.B2F, FLOATS, 0);
    }
}
