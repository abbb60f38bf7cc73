package io.graphlane.checkpoint.gguf;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.graphlane.checkpoint.recipe.HalfPrecision;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.junit.jupiter.api.Test;

/**
 * Each quantized block layout checked against a block built by hand from ggml's struct definitions in
 * {@code ggml-common.h}: the test chooses the quants, scales and super-block factors, places every
 * field at the byte and bit ggml's struct gives it, and computes each value with ggml's formula. The
 * layouts, little-endian, {@code half} = IEEE binary16:
 *
 * <pre>
 * block_q8_0 (34 bytes, 32 values): half d @0; int8 qs[32] @2.                    x[j] = qs[j]·d
 * block_q4_0 (18 bytes, 32 values): half d @0; u8 qs[16] @2.                      x[j] = (lo(qs[j]) − 8)·d, x[j+16] = (hi(qs[j]) − 8)·d
 * block_q4_K (144 bytes, 256 values): half d @0; half dmin @2; u8 scales[12] @4; u8 qs[128] @16.
 *     sub-block s (values 32s..32s+31) has 6-bit scale sc[s] and min m[s]:
 *       s &lt; 4: scales[s] bits 0-5 = sc[s], scales[s+4] bits 0-5 = m[s]
 *       s ≥ 4: scales[s+4] = sc[s] &amp; 15 | (m[s] &amp; 15) &lt;&lt; 4, scales[s−4] bits 6-7 = sc[s] &gt;&gt; 4, scales[s] bits 6-7 = m[s] &gt;&gt; 4
 *     value 32s + l: q = (s even ? lo : hi)(qs[32·(s/2) + l]);  x = d·sc[s]·q − dmin·m[s]
 * block_q5_K (176 bytes): half d @0; half dmin @2; u8 scales[12] @4; u8 qh[32] @16; u8 qs[128] @48.
 *     as q4_K, with q += 16 if bit s of qh[l] is set
 * block_q6_K (210 bytes): u8 ql[128] @0; u8 qh[64] @128; int8 scales[16] @192; half d @208.
 *     value k = 128n + 32c + l (n &lt; 2, c &lt; 4, l &lt; 32): low 4 bits from ql[64n + l + (c odd ? 32 : 0)],
 *     (c &lt; 2 ? low : high) nibble; high 2 bits = bits 2c, 2c+1 of qh[32n + l];
 *     x = d·scales[8n + l/16 + 2c]·(q − 32)
 * </pre>
 */
class GgmlBlockLayoutTest {

    private static ByteBuffer block(int bytes) {
        return ByteBuffer.allocate(bytes).order(ByteOrder.LITTLE_ENDIAN);
    }

    private static float[] decode(GgmlType type, ByteBuffer b) {
        float[] out = new float[type.blockValues()];
        type.decodeBlock(b, 0, out);
        return out;
    }

    @Test
    void typeIdsAndSizesAreGgmls() {
        assertEquals(0, GgmlType.F32.id());
        assertEquals(1, GgmlType.F16.id());
        assertEquals(2, GgmlType.Q4_0.id());
        assertEquals(8, GgmlType.Q8_0.id());
        assertEquals(12, GgmlType.Q4_K.id());
        assertEquals(13, GgmlType.Q5_K.id());
        assertEquals(14, GgmlType.Q6_K.id());
        assertEquals(30, GgmlType.BF16.id());
        // sizeof(block_*) from the static_asserts of ggml-common.h
        assertEquals(2 + 32, GgmlType.Q8_0.blockBytes());
        assertEquals(2 + 16, GgmlType.Q4_0.blockBytes());
        assertEquals(2 * 2 + 12 + 256 / 2, GgmlType.Q4_K.blockBytes());
        assertEquals(2 * 2 + 12 + 256 / 2 + 256 / 8, GgmlType.Q5_K.blockBytes());
        assertEquals(2 + 256 / 16 + 3 * 256 / 4, GgmlType.Q6_K.blockBytes());
        assertEquals("Q4_1 (ggml type 3)", GgmlType.describe(3));
        assertEquals(2 * 144, GgmlType.Q4_K.rowBytes(512));
    }

    @Test
    void q8_0() {
        ByteBuffer b = block(34);
        b.putShort(0, (short) 0x3400); // d = 0.25
        int[] qs = new int[32];
        for (int j = 0; j < 32; j++) {
            qs[j] = j * 9 - 128; // -128 .. 151 wraps: keep within int8 below
            qs[j] = (byte) qs[j];
            b.put(2 + j, (byte) qs[j]);
        }
        float[] expected = new float[32];
        for (int j = 0; j < 32; j++) {
            expected[j] = qs[j] * 0.25f;
        }
        assertArrayEquals(expected, decode(GgmlType.Q8_0, b));
        assertEquals(-32f, decode(GgmlType.Q8_0, b)[0]);
    }

    @Test
    void q4_0() {
        ByteBuffer b = block(18);
        b.putShort(0, (short) 0xB800); // d = -0.5
        int[] q = new int[32];
        for (int j = 0; j < 32; j++) {
            q[j] = (j * 5 + 3) % 16;
        }
        for (int j = 0; j < 16; j++) {
            b.put(2 + j, (byte) (q[j] | q[j + 16] << 4));
        }
        float[] expected = new float[32];
        for (int j = 0; j < 32; j++) {
            expected[j] = (q[j] - 8) * -0.5f;
        }
        assertArrayEquals(expected, decode(GgmlType.Q4_0, b));
        assertEquals((3 - 8) * -0.5f, decode(GgmlType.Q4_0, b)[0]);
    }

    /** Places six-bit scales and mins of eight sub-blocks as the header comment says. */
    private static void putScales(ByteBuffer b, int at, int[] sc, int[] m) {
        for (int s = 0; s < 4; s++) {
            b.put(at + s, (byte) (sc[s] | (sc[s + 4] >> 4) << 6));
            b.put(at + s + 4, (byte) (m[s] | (m[s + 4] >> 4) << 6));
            b.put(at + s + 8, (byte) ((sc[s + 4] & 15) | (m[s + 4] & 15) << 4));
        }
    }

    private static final int[] SC = {1, 63, 17, 40, 5, 33, 62, 48};
    private static final int[] M = {0, 2, 63, 31, 16, 47, 9, 60};

    @Test
    void q4_K() {
        ByteBuffer b = block(144);
        b.putShort(0, (short) 0x3C00); // d = 1
        b.putShort(2, (short) 0x3800); // dmin = 0.5
        putScales(b, 4, SC, M);
        int[] q = new int[256];
        for (int k = 0; k < 256; k++) {
            q[k] = (k * 7 + 3) % 16;
            int s = k / 32;
            int at = 16 + 32 * (s / 2) + k % 32;
            b.put(at, (byte) (b.get(at) | (s % 2 == 0 ? q[k] : q[k] << 4)));
        }
        float[] expected = new float[256];
        for (int k = 0; k < 256; k++) {
            int s = k / 32;
            expected[k] = 1f * SC[s] * q[k] - 0.5f * M[s];
        }
        assertArrayEquals(expected, decode(GgmlType.Q4_K, b));
        // value 32·5 + 0: sub-block 5 (high nibbles of qs[64..95]), sc 33, m 47
        assertEquals(33f * ((160 * 7 + 3) % 16) - 0.5f * 47, decode(GgmlType.Q4_K, b)[160]);
    }

    @Test
    void q5_K() {
        ByteBuffer b = block(176);
        b.putShort(0, (short) 0x3800); // d = 0.5
        b.putShort(2, (short) 0x3400); // dmin = 0.25
        putScales(b, 4, SC, M);
        int[] q = new int[256];
        for (int k = 0; k < 256; k++) {
            q[k] = (k * 11 + 5) % 32;
            int s = k / 32;
            int l = k % 32;
            int at = 48 + 32 * (s / 2) + l;
            int low = q[k] & 15;
            b.put(at, (byte) (b.get(at) | (s % 2 == 0 ? low : low << 4)));
            if (q[k] >= 16) {
                b.put(16 + l, (byte) (b.get(16 + l) | 1 << s));
            }
        }
        float[] expected = new float[256];
        for (int k = 0; k < 256; k++) {
            int s = k / 32;
            expected[k] = 0.5f * SC[s] * q[k] - 0.25f * M[s];
        }
        assertArrayEquals(expected, decode(GgmlType.Q5_K, b));
    }

    @Test
    void q6_K() {
        ByteBuffer b = block(210);
        int[] scales = {3, -7, 127, -128, 1, 0, 45, -20, 9, 100, -1, 64, 12, -90, 33, 2};
        for (int i = 0; i < 16; i++) {
            b.put(192 + i, (byte) scales[i]);
        }
        b.putShort(208, HalfPrecision.f32ToF16(0.125f));
        int[] q = new int[256];
        for (int k = 0; k < 256; k++) {
            q[k] = (k * 13 + 1) % 64;
            int n = k / 128;
            int c = (k % 128) / 32;
            int l = k % 32;
            int lowAt = 64 * n + l + (c % 2 == 1 ? 32 : 0);
            int low = q[k] & 15;
            b.put(lowAt, (byte) (b.get(lowAt) | (c < 2 ? low : low << 4)));
            int highAt = 128 + 32 * n + l;
            b.put(highAt, (byte) (b.get(highAt) | (q[k] >> 4) << (2 * c)));
        }
        float[] expected = new float[256];
        for (int k = 0; k < 256; k++) {
            int n = k / 128;
            int c = (k % 128) / 32;
            int l = k % 32;
            expected[k] = 0.125f * scales[8 * n + l / 16 + 2 * c] * (q[k] - 32);
        }
        assertArrayEquals(expected, decode(GgmlType.Q6_K, b));
    }

    @Test
    void unquantizedTypes() {
        ByteBuffer b = block(4);
        b.putFloat(0, -1.5f);
        assertEquals(-1.5f, decode(GgmlType.F32, b)[0]);
        b.putShort(0, (short) 0xC000);
        assertEquals(-2f, decode(GgmlType.F16, b)[0]);
        b.putShort(0, (short) 0x3FC0);
        assertEquals(1.5f, decode(GgmlType.BF16, b)[0]);
    }

    @Test
    void decodeWritesConsecutiveBlocksAtTheGivenOffsets() {
        ByteBuffer src = block(4 + 2 * 34);
        for (int blk = 0; blk < 2; blk++) {
            src.putShort(4 + 34 * blk, HalfPrecision.f32ToF16(blk + 1));
            for (int j = 0; j < 32; j++) {
                src.put(4 + 34 * blk + 2 + j, (byte) (j - 16));
            }
        }
        ByteBuffer dst = block(8 + 64 * 4);
        GgmlType.Q8_0.decode(src, 4, 2, dst, 8);
        assertEquals(0f, dst.getFloat(0));
        assertEquals(-16f, dst.getFloat(8));
        assertEquals(2f * 15, dst.getFloat(8 + 63 * 4));
    }

    @Test
    void referenceQuantizersRoundTripWithinTheirStep() {
        float[] x = new float[32];
        for (int j = 0; j < 32; j++) {
            x[j] = (float) Math.sin(j * 0.7) * 3f;
        }
        ByteBuffer q8 = block(34);
        GgufWriter.quantizeQ80(x, 0, q8);
        ByteBuffer q4 = block(18);
        GgufWriter.quantizeQ40(x, 0, q4);
        float[] d8 = decode(GgmlType.Q8_0, q8);
        float[] d4 = decode(GgmlType.Q4_0, q4);
        float amax = 0;
        for (float v : x) {
            amax = Math.max(amax, Math.abs(v));
        }
        for (int j = 0; j < 32; j++) {
            assertEquals(x[j], d8[j], amax / 127f, "q8_0 value " + j);
            assertEquals(x[j], d4[j], amax / 8f * 1.01f, "q4_0 value " + j);
        }
        // roundf rounds halves away from zero, as C does
        assertEquals(-3f, GgufWriter.roundf(-2.5f));
        assertEquals(3f, GgufWriter.roundf(2.5f));
    }
}
