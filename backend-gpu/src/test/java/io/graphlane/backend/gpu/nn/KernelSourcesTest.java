package io.graphlane.backend.gpu.nn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** The generated CUDA C defines exactly the kernels the launchers name, and compiles for the device's own architecture. */
class KernelSourcesTest {

    @Test
    void everyLaunchedKernelIsDefinedUnmangledExactlyOnceInOrder() {
        Matcher m = Pattern.compile("extern \"C\" __global__ void (\\w+)\\(").matcher(KernelSources.llama());
        List<String> defined = new ArrayList<>();
        while (m.find()) {
            defined.add(m.group(1));
        }
        assertEquals(KernelSources.KERNELS, defined);
    }

    @Test
    void sourceIsBalancedAndNeedsNoHeaders() {
        String src = KernelSources.llama();
        long open = src.chars().filter(c -> c == '{').count();
        long close = src.chars().filter(c -> c == '}').count();
        assertEquals(open, close, "unbalanced braces");
        assertFalse(src.contains("#include"), "NVRTC gets no include path: the source must be self-contained");
        assertFalse(src.contains("INFINITY") && !src.contains("GL_NEG_INF"), "math.h macros are not defined under NVRTC");
        assertFalse(src.contains("__half"), "half conversion is done by bits, without cuda_fp16.h");
    }

    @Test
    void compileOptionsTargetTheDevicesArchitecture() {
        assertEquals(List.of("--gpu-architecture=sm_90", "--std=c++17", "-DGL_BLOCK=256"), KernelSources.compileOptions(9, 0));
        assertTrue(KernelSources.compileOptions(8, 6).get(0).endsWith("sm_86"));
        assertThrows(IllegalArgumentException.class, () -> KernelSources.compileOptions(3, 5));
    }

    @Test
    void halfConversionMatchesTheJdkForEveryBitPattern() {
        for (int bits = 0; bits <= 0xffff; bits++) {
            float expected = jdkHalfToFloat((short) bits);
            float found = KernelSources.halfBitsToFloat((short) bits);
            if (Float.isNaN(expected)) {
                assertTrue(Float.isNaN(found), "bits " + Integer.toHexString(bits));
            } else {
                assertEquals(Float.floatToRawIntBits(expected), Float.floatToRawIntBits(found), "bits " + Integer.toHexString(bits));
            }
        }
    }

    @Test
    void bf16RoundingIsToTheNearestWithTiesToEven() {
        java.util.Random random = new java.util.Random(31);
        List<Float> values = new ArrayList<>(List.of(0f, -0f, 1f, -1f, Float.MIN_VALUE, Float.MAX_VALUE, -Float.MAX_VALUE,
                Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY, 1.00390625f /* 1 + 2^-8: a tie, to even (1) */,
                1.01171875f /* 1 + 3 * 2^-8: a tie, to even (1 + 2^-6) */));
        for (int i = 0; i < 200_000; i++) {
            values.add(Float.intBitsToFloat(random.nextInt()));
        }
        for (float f : values) {
            if (Float.isNaN(f)) {
                assertTrue(Float.isNaN(bf16(KernelSources.floatToBf16Bits(f))), "NaN stays NaN");
                continue;
            }
            int truncated = Float.floatToRawIntBits(f) >>> 16;
            double down = exact(truncated);
            double up = exact(truncated + 1);
            double dDown = Math.abs(f - down);
            double dUp = Math.abs(f - up);
            int expected = dDown < dUp ? truncated : dUp < dDown ? truncated + 1 : (truncated & 1) == 0 ? truncated : truncated + 1;
            assertEquals(expected & 0xffff, KernelSources.floatToBf16Bits(f) & 0xffff, "rounding " + f);
        }
        assertEquals(0x3f80, KernelSources.floatToBf16Bits(1.00390625f));
        assertEquals(0x3f82, KernelSources.floatToBf16Bits(1.01171875f));
    }

    private static float bf16(short bits) {
        return Float.intBitsToFloat((bits & 0xffff) << 16);
    }

    /** The value of bfloat16 {@code bits} (the top half of a float) as a double; past the largest finite one, 2^128. */
    private static double exact(int bits) {
        float v = Float.intBitsToFloat((bits & 0xffff) << 16);
        return Float.isInfinite(v) ? Math.copySign(Math.scalb(1.0, 128), v) : v;
    }

    /** IEEE binary16 decoded arithmetically (Java 17 has no Float.float16ToFloat). */
    private static float jdkHalfToFloat(short half) {
        int h = half & 0xffff;
        int sign = (h >>> 15) == 0 ? 1 : -1;
        int exponent = (h >>> 10) & 0x1f;
        int mantissa = h & 0x3ff;
        if (exponent == 0x1f) {
            return mantissa == 0 ? sign * Float.POSITIVE_INFINITY : Float.NaN;
        }
        if (exponent == 0) {
            return (float) (sign * Math.scalb((double) mantissa, -24));
        }
        return (float) (sign * Math.scalb(1.0 + mantissa / 1024.0, exponent - 15));
    }

    @Test
    void elementwiseGridsCoverEveryElementWithinTheLimit() {
        assertEquals(1, LaunchGeometry.elementwiseGrid(0, 256));
        assertEquals(1, LaunchGeometry.elementwiseGrid(256, 256));
        assertEquals(2, LaunchGeometry.elementwiseGrid(257, 256));
        assertEquals(LaunchGeometry.MAX_GRID, LaunchGeometry.elementwiseGrid(1L << 40, 256));
        assertThrows(IllegalArgumentException.class, () -> LaunchGeometry.elementwiseGrid(-1, 256));
    }

    @Test
    void attentionRefusesACacheLongerThanSharedMemoryHolds() {
        assertEquals(4 * 128, LaunchGeometry.attentionSharedBytes(127, 48 * 1024));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> LaunchGeometry.attentionSharedBytes(20_000, 48 * 1024));
        assertTrue(e.getMessage().contains("20001 positions"), e.getMessage());
    }
}
