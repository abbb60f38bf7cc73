package io.graphlane.checkpoint.recipe;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.checkpoint.CheckpointSource;
import io.graphlane.checkpoint.safetensors.SafetensorsWriter;
import io.graphlane.core.tensor.DType;
import io.graphlane.core.tensor.TensorSpec;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The dequantize step over a toy block format (one byte holding two 4-bit values, the low nibble
 * first): its validation before any read, its inferred spec, and slices that push down to the raw
 * blocks (or decode the covering blocks and select) equal to the same slice of the whole.
 */
class DequantizeRecipeTest {
    /** Two values per one-byte block: the low nibble, then the high nibble, as floats. */
    static final BlockFormat NIBBLES = new BlockFormat() {
        @Override
        public String name() {
            return "NIBBLES";
        }

        @Override
        public int blockValues() {
            return 2;
        }

        @Override
        public int blockBytes() {
            return 1;
        }

        @Override
        public void decode(ByteBuffer src, int srcOffset, int blocks, ByteBuffer dst, int dstOffset) {
            ByteBuffer out = dst.duplicate().order(ByteOrder.LITTLE_ENDIAN);
            for (int b = 0; b < blocks; b++) {
                int v = src.get(srcOffset + b) & 0xFF;
                out.putFloat(dstOffset + 8 * b, v & 15);
                out.putFloat(dstOffset + 8 * b + 4, v >> 4);
            }
        }
    };

    @TempDir
    Path tmp;

    private CheckpointSource source() throws IOException {
        Path dir = Files.createDirectories(tmp.resolve("m"));
        ByteBuffer raw = ByteBuffer.allocate(12);
        for (int i = 0; i < 12; i++) {
            raw.put(i, (byte) (i * 0x11 + 0x10));
        }
        ByteBuffer f = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putFloat(0, 1f).putFloat(4, 2f);
        new SafetensorsWriter()
                .add("q", TensorSpec.of(DType.U8, 3, 4), raw)
                .add("f", TensorSpec.of(DType.F32, 2), f)
                .write(dir.resolve("model.safetensors"));
        return CheckpointSource.open(dir);
    }

    private static float[] floats(ByteBuffer b) {
        float[] v = new float[b.remaining() / 4];
        for (int i = 0; i < v.length; i++) {
            v[i] = b.order(ByteOrder.LITTLE_ENDIAN).getFloat(b.position() + 4 * i);
        }
        return v;
    }

    @Test
    void infersTheSpecAndDecodesEveryBlock() throws IOException {
        try (CheckpointSource src = source()) {
            Recipe r = Recipe.source(src, "q").dequantize(NIBBLES);
            assertEquals(TensorSpec.of(DType.F32, 3, 8), r.spec());
            float[] v = floats(DerivedWeight.of("w", r).evaluateToBuffer());
            // byte 0 is 0x10: values 0, 1; byte 5 is 0x65: values 5, 6
            assertEquals(0f, v[0]);
            assertEquals(1f, v[1]);
            assertEquals(5f, v[10]);
            assertEquals(6f, v[11]);
            assertEquals(0, src.openLeaseCount());
        }
    }

    @Test
    void refusesNonByteInputsAndPartialBlocksBeforeReading() throws IOException {
        try (CheckpointSource src = source()) {
            RecipeException e = assertThrows(RecipeException.class, () -> Recipe.source(src, "f").dequantize(NIBBLES));
            assertEquals("recipe step dequantize(NIBBLES) of source('f'): input dtype F32 is not supported, expected U8 (the"
                    + " NIBBLES blocks as raw bytes)", e.getMessage());
            BlockFormat pairs = new BlockFormat() {
                public String name() {
                    return "PAIRS";
                }

                public int blockValues() {
                    return 4;
                }

                public int blockBytes() {
                    return 3;
                }

                public void decode(ByteBuffer src, int srcOffset, int blocks, ByteBuffer dst, int dstOffset) {
                    throw new AssertionError("never read");
                }
            };
            e = assertThrows(RecipeException.class, () -> Recipe.source(src, "q").dequantize(pairs));
            assertEquals("recipe step dequantize(PAIRS) of source('q'): last axis holds 4 bytes, expected a multiple of 3"
                    + " (one PAIRS block of 4 values)", e.getMessage());
            assertEquals(0, src.mappedBytes(), "nothing was read");
        }
    }

    @Test
    void slicesEqualTheSameSliceOfTheWhole() throws IOException {
        try (CheckpointSource src = source()) {
            DerivedWeight whole = DerivedWeight.of("w", Recipe.source(src, "q").dequantize(NIBBLES));
            float[] all = floats(whole.evaluateToBuffer());
            for (int axis = 0; axis < 2; axis++) {
                long n = whole.output().shape().dim(axis);
                for (long start = 0; start <= n; start++) {
                    for (long end = start; end <= n; end++) {
                        DerivedWeight part = whole.shard(axis, start, end);
                        float[] got = floats(part.evaluateToBuffer());
                        int k = 0;
                        for (int r = 0; r < 3; r++) {
                            for (int c = 0; c < 8; c++) {
                                int idx = axis == 0 ? r : c;
                                if (idx >= start && idx < end) {
                                    assertEquals(all[r * 8 + c], got[k++], part.toString());
                                }
                            }
                        }
                        assertEquals(got.length, k, part.toString());
                    }
                }
            }
            assertEquals("dequantize(NIBBLES, source('q'[axis 1: 1..3)))", whole.shard(1, 2, 6).recipe().toString());
            assertTrue(whole.shard(1, 1, 6).recipe().toString().startsWith("select[axis 1: 1..6)(dequantize(NIBBLES, source('q'[axis 1: 0..3)))"),
                    whole.shard(1, 1, 6).recipe().toString());
        }
    }

    /** Two values per byte, each nibble scaled by a non-dyadic factor so narrowing to 16 bits rounds. */
    static final BlockFormat SCALED = new BlockFormat() {
        @Override
        public String name() {
            return "SCALED";
        }

        @Override
        public int blockValues() {
            return 2;
        }

        @Override
        public int blockBytes() {
            return 1;
        }

        @Override
        public void decode(ByteBuffer src, int srcOffset, int blocks, ByteBuffer dst, int dstOffset) {
            ByteBuffer out = dst.duplicate().order(ByteOrder.LITTLE_ENDIAN);
            for (int b = 0; b < blocks; b++) {
                int v = src.get(srcOffset + b) & 0xFF;
                out.putFloat(dstOffset + 8 * b, (v & 15) * 0.3171f - 2.05f);
                out.putFloat(dstOffset + 8 * b + 4, (v >> 4) * -0.7013f + 1.3f);
            }
        }
    };

    /**
     * A cast or an 8-bit quantization of decoded blocks decodes row by row (no whole-tensor F32 intermediate), and its
     * bytes equal the same step applied to the whole decoded tensor: every value narrowed once, every row quantized
     * from the same F32 values.
     */
    @Test
    void castAndQuantizeOfDecodedBlocksEqualTheStepsOverTheWholeDecodedTensor() throws IOException {
        Path dir = Files.createDirectories(tmp.resolve("rows"));
        int rows = 5;
        int rowBytes = 48; // 96 values per row: three q8 blocks
        ByteBuffer raw = ByteBuffer.allocate(rows * rowBytes);
        for (int i = 0; i < raw.capacity(); i++) {
            raw.put(i, (byte) (i * 37 + 11));
        }
        new SafetensorsWriter().add("q", TensorSpec.of(DType.U8, rows, rowBytes), raw).write(dir.resolve("model.safetensors"));
        try (CheckpointSource src = CheckpointSource.open(dir)) {
            Recipe decoded = Recipe.source(src, "q").dequantize(SCALED);
            ByteBuffer f32 = DerivedWeight.of("w", decoded).evaluateToBuffer().order(ByteOrder.LITTLE_ENDIAN);
            int count = rows * rowBytes * 2;
            for (DType to : new DType[] {DType.BF16, DType.F16}) {
                ByteBuffer got = DerivedWeight.of("w", decoded.cast(to)).evaluateToBuffer().order(ByteOrder.LITTLE_ENDIAN);
                assertEquals(count * 2, got.remaining(), to.toString());
                for (int i = 0; i < count; i++) {
                    float v = f32.getFloat(f32.position() + 4 * i);
                    short want = to == DType.BF16 ? HalfPrecision.f32ToBf16(v) : HalfPrecision.f32ToF16(v);
                    assertEquals(want, got.getShort(got.position() + 2 * i), to + " value " + i);
                }
            }
            ByteBuffer want = ByteBuffer.allocate((int) BlockQ8.rowBytes(rowBytes * 2) * rows);
            BlockQ8.quantize(f32, rows, rowBytes * 2, want);
            ByteBuffer got = DerivedWeight.of("w", decoded.quantizeQ8()).evaluateToBuffer();
            assertEquals(want.rewind(), got.slice());
            // row slices push down and give the same rows
            ByteBuffer part = DerivedWeight.of("w", decoded.quantizeQ8()).shard(0, 2, 4).evaluateToBuffer();
            int q8Row = (int) BlockQ8.rowBytes(rowBytes * 2);
            assertEquals(want.slice(2 * q8Row, 2 * q8Row), part.slice());
            assertEquals(0, src.openLeaseCount());
        }
    }
}
