package io.graphlane.checkpoint.recipe;

/**
 * Conversions between F32 and the 16-bit float formats, bit-exact: widening is exact, narrowing
 * rounds to nearest even, keeps signed zeros, infinities and NaN (as a quiet NaN), and produces
 * subnormals where the format has them.
 */
public final class HalfPrecision {
    private HalfPrecision() {
    }

    /** The F32 value of BF16 bits (exact). */
    public static float bf16ToF32(short bits) {
        return Float.intBitsToFloat((bits & 0xFFFF) << 16);
    }

    /** BF16 bits of {@code value}, rounded to nearest even. */
    public static short f32ToBf16(float value) {
        int bits = Float.floatToRawIntBits(value);
        if (Float.isNaN(value)) {
            return (short) ((bits >>> 16) | 0x0040);
        }
        int rounding = 0x7FFF + ((bits >>> 16) & 1);
        return (short) ((bits + rounding) >>> 16);
    }

    /** The F32 value of IEEE binary16 bits (exact). */
    public static float f16ToF32(short half) {
        int h = half & 0xFFFF;
        int sign = (h & 0x8000) << 16;
        int exp = (h >>> 10) & 0x1F;
        int mant = h & 0x3FF;
        if (exp == 0x1F) {
            return Float.intBitsToFloat(sign | 0x7F80_0000 | (mant << 13));
        }
        if (exp == 0) {
            if (mant == 0) {
                return Float.intBitsToFloat(sign);
            }
            // subnormal: mant × 2^-24
            float v = mant * 0x1p-24f;
            return sign == 0 ? v : -v;
        }
        return Float.intBitsToFloat(sign | ((exp + 112) << 23) | (mant << 13));
    }

    /** IEEE binary16 bits of {@code value}, rounded to nearest even (overflow gives infinity). */
    public static short f32ToF16(float value) {
        int bits = Float.floatToRawIntBits(value);
        int sign = (bits >>> 16) & 0x8000;
        if (Float.isNaN(value)) {
            return (short) (sign | 0x7E00);
        }
        float abs = Math.abs(value);
        if (abs >= 65520f) {
            return (short) (sign | 0x7C00);
        }
        if (abs < 0x1p-14f) {
            // subnormal or zero: round abs / 2^-24 to the nearest even integer
            int mant = (int) Math.rint(abs * 0x1p24f);
            return (short) (sign | mant);
        }
        int e = ((bits >>> 23) & 0xFF) - 127 + 15;
        int mant = bits & 0x7F_FFFF;
        int half = (e << 10) | (mant >>> 13);
        int rest = mant & 0x1FFF;
        if (rest > 0x1000 || (rest == 0x1000 && (half & 1) == 1)) {
            half++;
        }
        return (short) (sign | half);
    }
}
