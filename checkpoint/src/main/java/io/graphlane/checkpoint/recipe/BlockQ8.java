package io.graphlane.checkpoint.recipe;

import io.graphlane.core.tensor.DType;
import io.graphlane.core.tensor.Shape;
import io.graphlane.core.tensor.TensorSpec;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * 8-bit weight-only quantization in blocks of {@value #BLOCK} values with one F32 scale each (the
 * Q8_0 idea): value ≈ scale × q, q an int8 in [-127, 127], scale = max |value| of the block / 127.
 *
 * <p>Layout of a quantized {@code rows × cols} matrix, as one {@code I8[rows, cols + cols / 8]}
 * tensor: each row holds its {@code cols} int8 quants, then its {@code cols / 32} little-endian F32
 * scales. A row starts on a multiple of 36 bytes per block, so every scale is 4-byte aligned.
 */
public final class BlockQ8 {
    /** Values per block, each block sharing one scale. */
    public static final int BLOCK = 32;

    private BlockQ8() {
    }

    /** Bytes of one quantized row of {@code cols} values: the quants, then the scales. */
    public static long rowBytes(long cols) {
        return cols + (cols / BLOCK) * Float.BYTES;
    }

    /**
     * The spec of the quantized form of a {@code rows × cols} matrix.
     *
     * @throws RecipeException naming the shape if it is not a matrix or its columns are not a multiple of {@value #BLOCK}
     */
    public static TensorSpec quantizedSpec(Shape matrix) {
        if (matrix.rank() != 2) {
            throw new RecipeException("quantizeQ8 needs a matrix [rows, cols], found shape " + matrix);
        }
        long cols = matrix.dim(1);
        if (cols % BLOCK != 0) {
            throw new RecipeException("quantizeQ8 needs a column count that is a multiple of " + BLOCK + ", found shape " + matrix
                    + " (" + cols + " columns)");
        }
        return new TensorSpec(DType.I8, Shape.of(matrix.dim(0), rowBytes(cols)));
    }

    /**
     * Quantizes {@code rows × cols} little-endian F32 values of {@code src} (from its position) into
     * {@code out} (from index 0) in this class's layout.
     */
    public static void quantize(ByteBuffer src, int rows, int cols, ByteBuffer out) {
        ByteBuffer in = src.slice().order(ByteOrder.LITTLE_ENDIAN);
        ByteBuffer dst = out.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        int blocks = cols / BLOCK;
        int rowOut = (int) rowBytes(cols);
        float[] values = new float[BLOCK];
        for (int r = 0; r < rows; r++) {
            int rowIn = r * cols * Float.BYTES;
            int quants = r * rowOut;
            int scales = quants + cols;
            for (int b = 0; b < blocks; b++) {
                float max = 0f;
                for (int i = 0; i < BLOCK; i++) {
                    float v = in.getFloat(rowIn + (b * BLOCK + i) * Float.BYTES);
                    values[i] = v;
                    max = Math.max(max, Math.abs(v));
                }
                float scale = max / 127f;
                float inverse = scale == 0f ? 0f : 1f / scale;
                for (int i = 0; i < BLOCK; i++) {
                    dst.put(quants + b * BLOCK + i, (byte) Math.round(values[i] * inverse));
                }
                dst.putFloat(scales + b * Float.BYTES, scale);
            }
        }
    }

    /**
     * Rearranges {@code rows} rows of {@code blocks} blocks of an F16 scale and {@value #BLOCK} int8 quants each
     * ({@code src} from its position, little-endian) into {@code out} (from index 0) in this class's layout: the quants
     * copied, each scale widened to F32 (exact). Nothing is re-quantized.
     */
    public static void repackHalfScaled(ByteBuffer src, int rows, int blocks, ByteBuffer out) {
        ByteBuffer in = src.slice().order(ByteOrder.LITTLE_ENDIAN);
        ByteBuffer dst = out.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        int inBlock = 2 + BLOCK;
        int cols = blocks * BLOCK;
        int rowOut = (int) rowBytes(cols);
        for (int r = 0; r < rows; r++) {
            int rowIn = r * blocks * inBlock;
            int quants = r * rowOut;
            int scales = quants + cols;
            for (int b = 0; b < blocks; b++) {
                int at = rowIn + b * inBlock;
                dst.putFloat(scales + b * Float.BYTES, HalfPrecision.f16ToF32(in.getShort(at)));
                dst.put(quants + b * BLOCK, in, at + 2, BLOCK);
            }
        }
    }
}
