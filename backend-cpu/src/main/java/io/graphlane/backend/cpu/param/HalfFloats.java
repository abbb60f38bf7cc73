package io.graphlane.backend.cpu.param;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.nio.ShortBuffer;

/** Exact widening of 16-bit floats (IEEE binary16 and bfloat16) to F32; every 16-bit value has an exact F32 value. */
public final class HalfFloats {
    private HalfFloats() {
    }

    /** The F32 value of one bfloat16 bit pattern (its upper 16 bits), NaN payloads kept. */
    public static float bf16ToFloat(short bits) {
        return Float.intBitsToFloat((bits & 0xffff) << 16);
    }

    /** The F32 value of one IEEE binary16 bit pattern, subnormals, infinities and NaN payloads included. */
    public static float f16ToFloat(short bits) {
        int h = bits & 0xffff;
        int sign = (h & 0x8000) << 16;
        int exponent = (h >>> 10) & 0x1f;
        int mantissa = h & 0x3ff;
        if (exponent == 0x1f) {
            return Float.intBitsToFloat(sign | 0x7f800000 | (mantissa << 13));
        }
        if (exponent == 0) {
            float magnitude = mantissa * 0x1p-24f; // exact: mantissa < 2^10, a power-of-two scale
            return sign == 0 ? magnitude : -magnitude;
        }
        return Float.intBitsToFloat(sign | ((exponent - 15 + 127) << 23) | (mantissa << 13));
    }

    /** Widens every bfloat16 element of {@code src} (little-endian) into {@code dst} (F32, little-endian). */
    public static void bf16ToF32(ByteBuffer src, ByteBuffer dst) {
        ShortBuffer in = src.duplicate().order(ByteOrder.LITTLE_ENDIAN).asShortBuffer();
        IntBuffer out = dst.duplicate().order(ByteOrder.LITTLE_ENDIAN).asIntBuffer();
        checkSizes(in.remaining(), out.remaining());
        int n = in.remaining();
        for (int i = 0; i < n; i++) {
            out.put(i, (in.get(i) & 0xffff) << 16);
        }
    }

    /** Widens every binary16 element of {@code src} (little-endian) into {@code dst} (F32, little-endian). */
    public static void f16ToF32(ByteBuffer src, ByteBuffer dst) {
        ShortBuffer in = src.duplicate().order(ByteOrder.LITTLE_ENDIAN).asShortBuffer();
        FloatBuffer out = dst.duplicate().order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer();
        checkSizes(in.remaining(), out.remaining());
        int n = in.remaining();
        for (int i = 0; i < n; i++) {
            out.put(i, f16ToFloat(in.get(i)));
        }
    }

    private static void checkSizes(int halves, int floats) {
        if (halves != floats) {
            throw new IllegalArgumentException("widening " + halves + " 16-bit elements needs room for exactly "
                    + halves + " F32 elements, found " + floats);
        }
    }
}
