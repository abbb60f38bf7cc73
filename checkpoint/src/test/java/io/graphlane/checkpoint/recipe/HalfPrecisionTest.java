package io.graphlane.checkpoint.recipe;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class HalfPrecisionTest {

    @Test
    void everyF16BitPatternWidensAndNarrowsBackToItself() {
        for (int h = 0; h < 65536; h++) {
            float f = HalfPrecision.f16ToF32((short) h);
            if (Float.isNaN(f)) {
                assertTrue(((h >>> 10) & 0x1F) == 0x1F && (h & 0x3FF) != 0, "NaN only from NaN bits " + h);
                continue;
            }
            assertEquals((short) h, HalfPrecision.f32ToF16(f), "bits " + Integer.toHexString(h));
        }
        assertEquals(1.0f, HalfPrecision.f16ToF32((short) 0x3C00));
        assertEquals(65504f, HalfPrecision.f16ToF32((short) 0x7BFF));
        assertEquals(0x1p-24f, HalfPrecision.f16ToF32((short) 0x0001));
    }

    @Test
    void narrowingRoundsToNearestEven() {
        // 1 + 2^-11 is halfway between 1 and the next f16 (1 + 2^-10): ties to even gives 1
        assertEquals((short) 0x3C00, HalfPrecision.f32ToF16(1f + 0x1p-11f));
        // 1 + 3·2^-11 is halfway between 1 + 2^-10 (odd) and 1 + 2^-9 (even)
        assertEquals((short) 0x3C02, HalfPrecision.f32ToF16(1f + 3 * 0x1p-11f));
        assertEquals((short) 0x7C00, HalfPrecision.f32ToF16(1e6f));
        assertEquals((short) 0x8000, HalfPrecision.f32ToF16(-0f));
        // bf16: 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even gives 1
        assertEquals((short) 0x3F80, HalfPrecision.f32ToBf16(1f + 0x1p-8f));
        assertEquals((short) 0x3F81, HalfPrecision.f32ToBf16(1f + 0x1p-8f + 0x1p-20f));
        assertTrue(Float.isNaN(HalfPrecision.bf16ToF32(HalfPrecision.f32ToBf16(Float.NaN))));
    }

    @Test
    void everyBf16BitPatternRoundTrips() {
        for (int h = 0; h < 65536; h++) {
            float f = HalfPrecision.bf16ToF32((short) h);
            if (!Float.isNaN(f)) {
                assertEquals((short) h, HalfPrecision.f32ToBf16(f));
            }
        }
    }
}
