package io.graphlane.backend.cpu.param;

import io.graphlane.checkpoint.recipe.HalfPrecision;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.ShortBuffer;

/**
 * Exact bulk widening of 16-bit float tensors (IEEE binary16 and bfloat16) into F32 buffers; each
 * element goes through the checkpoint module's {@link HalfPrecision}, so there is one definition of
 * the conversion in the project.
 */
public final class HalfFloats {
    private HalfFloats() {
    }

    /** Widens every bfloat16 element of {@code src} (little-endian) into {@code dst} (F32, little-endian). */
    public static void bf16ToF32(ByteBuffer src, ByteBuffer dst) {
        ShortBuffer in = src.duplicate().order(ByteOrder.LITTLE_ENDIAN).asShortBuffer();
        FloatBuffer out = dst.duplicate().order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer();
        checkSizes(in.remaining(), out.remaining());
        int n = in.remaining();
        for (int i = 0; i < n; i++) {
            out.put(i, HalfPrecision.bf16ToF32(in.get(i)));
        }
    }

    /** Widens every binary16 element of {@code src} (little-endian) into {@code dst} (F32, little-endian). */
    public static void f16ToF32(ByteBuffer src, ByteBuffer dst) {
        ShortBuffer in = src.duplicate().order(ByteOrder.LITTLE_ENDIAN).asShortBuffer();
        FloatBuffer out = dst.duplicate().order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer();
        checkSizes(in.remaining(), out.remaining());
        int n = in.remaining();
        for (int i = 0; i < n; i++) {
            out.put(i, HalfPrecision.f16ToF32(in.get(i)));
        }
    }

    private static void checkSizes(int halves, int floats) {
        if (halves != floats) {
            throw new IllegalArgumentException("widening " + halves + " 16-bit elements needs room for exactly "
                    + halves + " F32 elements, found " + floats);
        }
    }
}
