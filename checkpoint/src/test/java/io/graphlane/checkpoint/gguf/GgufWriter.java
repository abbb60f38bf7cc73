package io.graphlane.checkpoint.gguf;

import io.graphlane.checkpoint.recipe.HalfPrecision;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Writes GGUF files for tests: metadata of every value type, and tensors given as raw blocks or as F32
 * values encoded to F32, F16, BF16, Q8_0, Q4_0 (ggml's reference quantizers, {@code quantize_row_q8_0_ref}
 * and {@code quantize_row_q4_0_ref}) or Q4_K (a plain min/max quantizer: valid Q4_K blocks, not ggml's
 * search for the best scales). Tensors are laid out as ggml lays them out: in table order, each at a
 * multiple of the alignment and padded to it.
 */
public final class GgufWriter {
    private record Tensor(String name, GgmlType type, long[] ne, byte[] data) {
    }

    private final Map<String, GgufValue> metadata = new LinkedHashMap<>();
    private final List<Tensor> tensors = new ArrayList<>();
    private int version = 3;
    private int alignment = GgufFile.DEFAULT_ALIGNMENT;

    public GgufWriter version(int v) {
        this.version = v;
        return this;
    }

    /** Sets {@code general.alignment} (a UINT32) and lays the data out with it. */
    public GgufWriter alignment(int a) {
        this.alignment = a;
        metadata.put(GgufFile.ALIGNMENT_KEY, GgufValue.scalar(GgufValueType.UINT32, (long) a));
        return this;
    }

    public GgufWriter put(String key, GgufValue value) {
        metadata.put(key, value);
        return this;
    }

    public GgufWriter put(String key, String value) {
        return put(key, GgufValue.scalar(GgufValueType.STRING, value));
    }

    public GgufWriter putU32(String key, long value) {
        return put(key, GgufValue.scalar(GgufValueType.UINT32, value));
    }

    public GgufWriter putF32(String key, double value) {
        return put(key, GgufValue.scalar(GgufValueType.FLOAT32, (double) (float) value));
    }

    public GgufWriter putBool(String key, boolean value) {
        return put(key, GgufValue.scalar(GgufValueType.BOOL, value));
    }

    public GgufWriter putStrings(String key, String... values) {
        return put(key, GgufValue.array(GgufValueType.STRING, values));
    }

    public GgufWriter putFloats(String key, float... values) {
        return put(key, GgufValue.array(GgufValueType.FLOAT32, values));
    }

    public GgufWriter putInts(String key, int... values) {
        return put(key, GgufValue.array(GgufValueType.INT32, values));
    }

    /** A tensor of raw bytes in ggml order ({@code ne[0]} innermost). */
    public GgufWriter addRaw(String name, GgmlType type, long[] ne, byte[] data) {
        tensors.add(new Tensor(name, type, ne.clone(), data.clone()));
        return this;
    }

    /** A tensor of row-major (Hugging Face order) shape {@code dims} holding {@code values}, encoded as {@code type}. */
    public GgufWriter add(String name, GgmlType type, long[] dims, float[] values) {
        long[] ne = new long[dims.length];
        for (int i = 0; i < dims.length; i++) {
            ne[i] = dims[dims.length - 1 - i];
        }
        return addRaw(name, type, ne, encode(type, values, (int) ne[0]));
    }

    /** {@code values} (rows of {@code rowLength}) encoded as {@code type}, little-endian. */
    static byte[] encode(GgmlType type, float[] values, int rowLength) {
        ByteBuffer out = ByteBuffer.allocate((int) (type.rowBytes(rowLength) * (values.length / rowLength)))
                .order(ByteOrder.LITTLE_ENDIAN);
        for (int b = 0; b < values.length / type.blockValues(); b++) {
            int from = b * type.blockValues();
            switch (type) {
                case F32 -> out.putFloat(values[from]);
                case F16 -> out.putShort(HalfPrecision.f32ToF16(values[from]));
                case BF16 -> out.putShort(HalfPrecision.f32ToBf16(values[from]));
                case Q8_0 -> quantizeQ80(values, from, out);
                case Q4_0 -> quantizeQ40(values, from, out);
                case Q4_K -> quantizeQ4K(values, from, out);
                default -> throw new IllegalArgumentException("the test writer does not quantize " + type);
            }
        }
        return out.array();
    }

    /** C's {@code roundf}: halves away from zero. */
    static float roundf(float v) {
        return (float) Math.copySign(Math.floor(Math.abs((double) v) + 0.5), v);
    }

    /** ggml's quantize_row_q8_0_ref for one block. */
    static void quantizeQ80(float[] x, int from, ByteBuffer out) {
        float amax = 0f;
        for (int j = 0; j < 32; j++) {
            amax = Math.max(amax, Math.abs(x[from + j]));
        }
        float d = amax / 127f;
        float id = d != 0f ? 1.0f / d : 0.0f;
        out.putShort(HalfPrecision.f32ToF16(d));
        for (int j = 0; j < 32; j++) {
            out.put((byte) roundf(x[from + j] * id));
        }
    }

    /** ggml's quantize_row_q4_0_ref for one block. */
    static void quantizeQ40(float[] x, int from, ByteBuffer out) {
        float amax = 0f;
        float max = 0f;
        for (int j = 0; j < 32; j++) {
            float v = x[from + j];
            if (amax < Math.abs(v)) {
                amax = Math.abs(v);
                max = v;
            }
        }
        float d = max / -8f;
        float id = d != 0f ? 1.0f / d : 0.0f;
        out.putShort(HalfPrecision.f32ToF16(d));
        for (int j = 0; j < 16; j++) {
            float x0 = x[from + j] * id;
            float x1 = x[from + 16 + j] * id;
            int xi0 = Math.min(15, (byte) (int) (x0 + 8.5f));
            int xi1 = Math.min(15, (byte) (int) (x1 + 8.5f));
            out.put((byte) (xi0 | (xi1 << 4)));
        }
    }

    /**
     * One Q4_K block by a plain quantizer: each sub-block of 32 gets scale (max − min) / 15 and min −min
     * (min clamped to at most 0), the eight scales and mins are quantized to 6 bits against the super-block
     * factors d = max scale / 63 and dmin = max min / 63, and each value to the nearest 4-bit level.
     */
    static void quantizeQ4K(float[] x, int from, ByteBuffer out) {
        float[] scales = new float[8];
        float[] mins = new float[8];
        for (int s = 0; s < 8; s++) {
            float lo = 0f;
            float hi = -Float.MAX_VALUE;
            for (int l = 0; l < 32; l++) {
                float v = x[from + 32 * s + l];
                lo = Math.min(lo, v);
                hi = Math.max(hi, v);
            }
            scales[s] = (hi - lo) / 15f;
            mins[s] = -lo;
        }
        float maxScale = 0f;
        float maxMin = 0f;
        for (int s = 0; s < 8; s++) {
            maxScale = Math.max(maxScale, scales[s]);
            maxMin = Math.max(maxMin, mins[s]);
        }
        float d = HalfPrecision.f16ToF32(HalfPrecision.f32ToF16(maxScale / 63f));
        float dmin = HalfPrecision.f16ToF32(HalfPrecision.f32ToF16(maxMin / 63f));
        int[] ls = new int[8];
        int[] lm = new int[8];
        for (int s = 0; s < 8; s++) {
            ls[s] = d == 0f ? 0 : Math.min(63, Math.round(scales[s] / d));
            lm[s] = dmin == 0f ? 0 : Math.min(63, Math.round(mins[s] / dmin));
        }
        out.putShort(HalfPrecision.f32ToF16(d));
        out.putShort(HalfPrecision.f32ToF16(dmin));
        out.put(packScalesK(ls, lm));
        byte[] qs = new byte[128];
        for (int s = 0; s < 8; s++) {
            float ds = d * ls[s];
            float ms = dmin * lm[s];
            for (int l = 0; l < 32; l++) {
                float v = x[from + 32 * s + l];
                int q = ds == 0f ? 0 : Math.max(0, Math.min(15, Math.round((v + ms) / ds)));
                int at = 32 * (s / 2) + l;
                qs[at] |= (byte) (s % 2 == 0 ? q : q << 4);
            }
        }
        out.put(qs);
    }

    /** The 12 bytes holding eight 6-bit scales and mins, packed as ggml's K-quants pack them. */
    static byte[] packScalesK(int[] ls, int[] lm) {
        byte[] scales = new byte[12];
        for (int j = 0; j < 8; j++) {
            if (j < 4) {
                scales[j] = (byte) ls[j];
                scales[j + 4] = (byte) lm[j];
            } else {
                scales[j + 4] = (byte) ((ls[j] & 0xF) | ((lm[j] & 0xF) << 4));
                scales[j - 4] |= (byte) ((ls[j] >> 4) << 6);
                scales[j] |= (byte) ((lm[j] >> 4) << 6);
            }
        }
        return scales;
    }

    /** The file's bytes. */
    public byte[] toBytes() {
        Out out = new Out();
        out.bytes("GGUF".getBytes(StandardCharsets.US_ASCII));
        out.u32(version);
        out.u64(tensors.size());
        out.u64(metadata.size());
        for (Map.Entry<String, GgufValue> e : metadata.entrySet()) {
            out.string(e.getKey());
            GgufValue v = e.getValue();
            out.u32(v.type().id());
            if (v.type() == GgufValueType.ARRAY) {
                out.u32(v.elementType().id());
                out.u64(v.length());
                writeArray(out, v);
            } else {
                writeScalar(out, v.type(), v.value());
            }
        }
        long offset = 0;
        for (Tensor t : tensors) {
            out.string(t.name());
            out.u32(t.ne().length);
            for (long n : t.ne()) {
                out.u64(n);
            }
            out.u32(t.type().id());
            out.u64(offset);
            offset = pad(offset + t.data().length);
        }
        out.padTo(alignment);
        for (Tensor t : tensors) {
            out.bytes(t.data());
            out.padTo(alignment);
        }
        return out.toByteArray();
    }

    private long pad(long n) {
        return (n + alignment - 1) / alignment * alignment;
    }

    /** Writes the file. */
    public Path write(Path file) {
        try {
            Files.write(file, toBytes());
            return file;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static void writeScalar(Out out, GgufValueType type, Object value) {
        switch (type) {
            case UINT8, INT8 -> out.u8((int) (long) (Long) value);
            case BOOL -> out.u8((Boolean) value ? 1 : 0);
            case UINT16, INT16 -> out.u16((int) (long) (Long) value);
            case UINT32, INT32 -> out.u32((long) (Long) value);
            case UINT64, INT64 -> out.u64((Long) value);
            case FLOAT32 -> out.u32(Float.floatToRawIntBits((float) (double) (Double) value) & 0xFFFF_FFFFL);
            case FLOAT64 -> out.u64(Double.doubleToRawLongBits((Double) value));
            case STRING -> out.string((String) value);
            default -> throw new IllegalArgumentException(type.toString());
        }
    }

    private static void writeArray(Out out, GgufValue v) {
        Object a = v.value();
        switch (v.elementType()) {
            case UINT8, INT8, BOOL -> out.bytes((byte[]) a);
            case UINT16, INT16 -> {
                for (short s : (short[]) a) {
                    out.u16(s);
                }
            }
            case UINT32, INT32 -> {
                for (int i : (int[]) a) {
                    out.u32(i & 0xFFFF_FFFFL);
                }
            }
            case FLOAT32 -> {
                for (float f : (float[]) a) {
                    out.u32(Float.floatToRawIntBits(f) & 0xFFFF_FFFFL);
                }
            }
            case UINT64, INT64 -> {
                for (long l : (long[]) a) {
                    out.u64(l);
                }
            }
            case FLOAT64 -> {
                for (double d : (double[]) a) {
                    out.u64(Double.doubleToRawLongBits(d));
                }
            }
            case STRING -> {
                for (String s : (String[]) a) {
                    out.string(s);
                }
            }
            default -> throw new IllegalArgumentException(v.typeName());
        }
    }

    /** A little-endian byte sink. */
    static final class Out {
        private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();

        void u8(int v) {
            bytes.write(v);
        }

        void u16(int v) {
            u8(v & 0xFF);
            u8((v >>> 8) & 0xFF);
        }

        void u32(long v) {
            for (int i = 0; i < 4; i++) {
                u8((int) (v >>> (8 * i)) & 0xFF);
            }
        }

        void u64(long v) {
            for (int i = 0; i < 8; i++) {
                u8((int) (v >>> (8 * i)) & 0xFF);
            }
        }

        void bytes(byte[] b) {
            bytes.write(b, 0, b.length);
        }

        void string(String s) {
            byte[] b = s.getBytes(StandardCharsets.UTF_8);
            u64(b.length);
            bytes(b);
        }

        void padTo(int alignment) {
            while (bytes.size() % alignment != 0) {
                u8(0);
            }
        }

        byte[] toByteArray() {
            return bytes.toByteArray();
        }
    }
}
