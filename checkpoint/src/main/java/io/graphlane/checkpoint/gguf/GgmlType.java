package io.graphlane.checkpoint.gguf;

import io.graphlane.checkpoint.recipe.BlockFormat;
import io.graphlane.checkpoint.recipe.HalfPrecision;
import io.graphlane.core.tensor.DType;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Collectors;

/**
 * The ggml tensor types graphlane reads from GGUF files, with ggml's numeric ids and block layouts
 * ({@code ggml-common.h}); decoding follows ggml's reference {@code dequantize_row_*} arithmetic in
 * the same float operation order, so a decoded value equals ggml's bit for bit.
 *
 * <p>Layouts (all little-endian; {@code half} is IEEE binary16; a row of {@code ne[0]} values is
 * {@code ne[0] / blockValues} consecutive blocks):
 * <ul>
 *   <li>{@code F32}, {@code F16}, {@code BF16}: one value per "block".
 *   <li>{@code Q8_0}, 32 values in 34 bytes: {@code half d; int8 qs[32]}; {@code x[j] = qs[j] * d}.
 *   <li>{@code Q4_0}, 32 values in 18 bytes: {@code half d; u8 qs[16]}; {@code x[j] = ((qs[j] & 15) - 8) * d},
 *       {@code x[j + 16] = ((qs[j] >> 4) - 8) * d}.
 *   <li>{@code Q4_K}, 256 values in 144 bytes: {@code half d; half dmin; u8 scales[12]; u8 qs[128]}. Eight
 *       sub-blocks of 32 with a 6-bit scale {@code sc} and 6-bit min {@code m} each, packed in {@code scales}
 *       (sub-block {@code j < 4}: {@code sc = scales[j] & 63, m = scales[j + 4] & 63}; {@code j ≥ 4}:
 *       {@code sc = (scales[j + 4] & 15) | (scales[j - 4] >> 6) << 4}, {@code m = (scales[j + 4] >> 4) | (scales[j] >> 6) << 4}).
 *       Values 64 at a time from 32 bytes of {@code qs}: the low nibbles are sub-block {@code 2i}, the high
 *       nibbles sub-block {@code 2i + 1}; {@code x = d·sc · q − dmin·m}.
 *   <li>{@code Q5_K}, 256 values in 176 bytes: {@code half d; half dmin; u8 scales[12]; u8 qh[32]; u8 qs[128]}:
 *       as Q4_K with a fifth bit from {@code qh[l]}, bit {@code 2i} for the low nibbles and {@code 2i + 1} for
 *       the high nibbles of the {@code i}-th 64 values.
 *   <li>{@code Q6_K}, 256 values in 210 bytes: {@code u8 ql[128]; u8 qh[64]; int8 scales[16]; half d}. Two
 *       halves of 128 values (each using 64 bytes of {@code ql}, 32 of {@code qh}, 8 scales); for {@code l < 32}
 *       the four values {@code l, l+32, l+64, l+96} take the low nibble of {@code ql[l]}, the low nibble of
 *       {@code ql[l+32]}, the high nibble of {@code ql[l]}, the high nibble of {@code ql[l+32]} and bit pairs
 *       0–1, 2–3, 4–5, 6–7 of {@code qh[l]} as their top two bits; {@code x = d · scales[l/16 + 2k] · (q − 32)}.
 * </ul>
 */
public enum GgmlType implements BlockFormat {
    F32(0, 1, 4, DType.F32),
    F16(1, 1, 2, DType.F16),
    Q4_0(2, 32, 18, null),
    Q8_0(8, 32, 34, null),
    Q4_K(12, 256, 144, null),
    Q5_K(13, 256, 176, null),
    Q6_K(14, 256, 210, null),
    BF16(30, 1, 2, DType.BF16);

    /** ggml's names of the type ids it defines that graphlane does not read, for refusals. */
    private static final Map<Integer, String> OTHER_NAMES = Map.ofEntries(
            Map.entry(3, "Q4_1"), Map.entry(6, "Q5_0"), Map.entry(7, "Q5_1"), Map.entry(9, "Q8_1"),
            Map.entry(10, "Q2_K"), Map.entry(11, "Q3_K"), Map.entry(15, "Q8_K"), Map.entry(16, "IQ2_XXS"),
            Map.entry(17, "IQ2_XS"), Map.entry(18, "IQ3_XXS"), Map.entry(19, "IQ1_S"), Map.entry(20, "IQ4_NL"),
            Map.entry(21, "IQ3_S"), Map.entry(22, "IQ2_S"), Map.entry(23, "IQ4_XS"), Map.entry(24, "I8"),
            Map.entry(25, "I16"), Map.entry(26, "I32"), Map.entry(27, "I64"), Map.entry(28, "F64"),
            Map.entry(29, "IQ1_M"), Map.entry(34, "TQ1_0"), Map.entry(35, "TQ2_0"), Map.entry(39, "MXFP4"));

    private final int id;
    private final int blockValues;
    private final int blockBytes;
    private final DType dtype;

    GgmlType(int id, int blockValues, int blockBytes, DType dtype) {
        this.id = id;
        this.blockValues = blockValues;
        this.blockBytes = blockBytes;
        this.dtype = dtype;
    }

    /** ggml's numeric id ({@code enum ggml_type}). */
    public int id() {
        return id;
    }

    @Override
    public int blockValues() {
        return blockValues;
    }

    @Override
    public int blockBytes() {
        return blockBytes;
    }

    /** True for the block-quantized types (read as raw {@code U8} blocks and decoded by {@code dequantize}). */
    public boolean isQuantized() {
        return dtype == null;
    }

    /** The element dtype of an unquantized type, or empty for a quantized one. */
    public Optional<DType> dtype() {
        return Optional.ofNullable(dtype);
    }

    /** Bytes of a row of {@code values} values (a multiple of {@link #blockValues()}). */
    public long rowBytes(long values) {
        if (values % blockValues != 0) {
            throw new IllegalArgumentException(name() + " rows hold whole blocks of " + blockValues + " values, found "
                    + values);
        }
        return Math.multiplyExact(values / blockValues, (long) blockBytes);
    }

    /** The type with ggml id {@code id}, or empty. */
    public static Optional<GgmlType> fromId(long id) {
        return Arrays.stream(values()).filter(t -> t.id == id).findFirst();
    }

    /** ggml's name of type id {@code id} ("type 99" if ggml defines none), for errors. */
    public static String describe(long id) {
        Optional<GgmlType> t = fromId(id);
        if (t.isPresent()) {
            return t.get().name();
        }
        String other = id >= 0 && id <= Integer.MAX_VALUE ? OTHER_NAMES.get((int) id) : null;
        return other != null ? other + " (ggml type " + id + ")" : "ggml type " + id;
    }

    /** The supported type names, for error messages. */
    public static String supportedNames() {
        return Arrays.stream(values()).map(Enum::name).collect(Collectors.joining(", "));
    }

    @Override
    public void decode(ByteBuffer src, int srcOffset, int blocks, ByteBuffer dst, int dstOffset) {
        ByteBuffer in = src.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        ByteBuffer out = dst.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        float[] values = new float[blockValues];
        for (int b = 0; b < blocks; b++) {
            decodeBlock(in, srcOffset + b * blockBytes, values);
            int at = dstOffset + b * blockValues * Float.BYTES;
            for (int i = 0; i < blockValues; i++) {
                out.putFloat(at + i * Float.BYTES, values[i]);
            }
        }
    }

    /** Decodes the one block at byte {@code at} of {@code in} (little-endian) into {@code out[0, blockValues)}. */
    public void decodeBlock(ByteBuffer in, int at, float[] out) {
        switch (this) {
            case F32 -> out[0] = in.getFloat(at);
            case F16 -> out[0] = HalfPrecision.f16ToF32(in.getShort(at));
            case BF16 -> out[0] = HalfPrecision.bf16ToF32(in.getShort(at));
            case Q8_0 -> decodeQ80(in, at, out);
            case Q4_0 -> decodeQ40(in, at, out);
            case Q4_K -> decodeK(in, at, out, false);
            case Q5_K -> decodeK(in, at, out, true);
            case Q6_K -> decodeQ6K(in, at, out);
            default -> throw new IllegalStateException("no decoder for " + this);
        }
    }

    private static void decodeQ80(ByteBuffer in, int at, float[] out) {
        float d = HalfPrecision.f16ToF32(in.getShort(at));
        for (int j = 0; j < 32; j++) {
            out[j] = in.get(at + 2 + j) * d;
        }
    }

    private static void decodeQ40(ByteBuffer in, int at, float[] out) {
        float d = HalfPrecision.f16ToF32(in.getShort(at));
        for (int j = 0; j < 16; j++) {
            int q = in.get(at + 2 + j) & 0xFF;
            out[j] = ((q & 0x0F) - 8) * d;
            out[j + 16] = ((q >> 4) - 8) * d;
        }
    }

    /** Sub-block {@code j}'s 6-bit scale (index 0) and min (index 1) from the 12 packed bytes at {@code scales}. */
    static int[] scaleMinK4(ByteBuffer in, int scales, int j) {
        int sc;
        int m;
        if (j < 4) {
            sc = (in.get(scales + j) & 0xFF) & 63;
            m = (in.get(scales + j + 4) & 0xFF) & 63;
        } else {
            sc = ((in.get(scales + j + 4) & 0xFF) & 0xF) | (((in.get(scales + j - 4) & 0xFF) >> 6) << 4);
            m = ((in.get(scales + j + 4) & 0xFF) >> 4) | (((in.get(scales + j) & 0xFF) >> 6) << 4);
        }
        return new int[] {sc, m};
    }

    /**
     * Q4_K, or Q5_K when {@code fifthBit}: eight sub-blocks of 32 with 6-bit scales and mins; Q5_K's
     * {@code qh} (32 bytes before the nibbles) adds 16 where bit {@code s} of {@code qh[l]} is set.
     */
    private static void decodeK(ByteBuffer in, int at, float[] out, boolean fifthBit) {
        float d = HalfPrecision.f16ToF32(in.getShort(at));
        float min = HalfPrecision.f16ToF32(in.getShort(at + 2));
        int scales = at + 4;
        int qh = at + 16;
        int q = fifthBit ? at + 48 : at + 16;
        int y = 0;
        for (int is = 0; is < 8; is += 2) {
            int[] a = scaleMinK4(in, scales, is);
            float d1 = d * a[0];
            float m1 = min * a[1];
            int[] b = scaleMinK4(in, scales, is + 1);
            float d2 = d * b[0];
            float m2 = min * b[1];
            for (int l = 0; l < 32; l++) {
                int high = fifthBit && ((in.get(qh + l) >> is) & 1) != 0 ? 16 : 0;
                out[y++] = d1 * (((in.get(q + l) & 0xFF) & 0xF) + high) - m1;
            }
            for (int l = 0; l < 32; l++) {
                int high = fifthBit && ((in.get(qh + l) >> (is + 1)) & 1) != 0 ? 16 : 0;
                out[y++] = d2 * (((in.get(q + l) & 0xFF) >> 4) + high) - m2;
            }
            q += 32;
        }
    }

    private static void decodeQ6K(ByteBuffer in, int at, float[] out) {
        int ql = at;
        int qh = at + 128;
        int sc = at + 192;
        float d = HalfPrecision.f16ToF32(in.getShort(at + 208));
        for (int n = 0; n < 256; n += 128) {
            for (int l = 0; l < 32; l++) {
                int is = l / 16;
                int low0 = in.get(ql + l) & 0xFF;
                int low32 = in.get(ql + l + 32) & 0xFF;
                int h = in.get(qh + l) & 0xFF;
                int q1 = ((low0 & 0xF) | (((h >> 0) & 3) << 4)) - 32;
                int q2 = ((low32 & 0xF) | (((h >> 2) & 3) << 4)) - 32;
                int q3 = ((low0 >> 4) | (((h >> 4) & 3) << 4)) - 32;
                int q4 = ((low32 >> 4) | (((h >> 6) & 3) << 4)) - 32;
                out[n + l] = d * in.get(sc + is) * q1;
                out[n + l + 32] = d * in.get(sc + is + 2) * q2;
                out[n + l + 64] = d * in.get(sc + is + 4) * q3;
                out[n + l + 96] = d * in.get(sc + is + 6) * q4;
            }
            ql += 64;
            qh += 32;
            sc += 8;
        }
    }
}
