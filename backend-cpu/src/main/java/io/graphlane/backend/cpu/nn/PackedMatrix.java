package io.graphlane.backend.cpu.nn;

import io.graphlane.checkpoint.recipe.BlockQ8;
import io.graphlane.checkpoint.recipe.HalfPrecision;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.util.Objects;

/**
 * A weight matrix kept narrower than F32 in memory, row-major and little-endian: 16-bit floats
 * (bfloat16 or IEEE binary16, typically the checkpoint's mapped bytes used in place) or 8-bit
 * blocks with one scale per 32 values ({@link BlockQ8}). The kernels widen it while they read it.
 */
public final class PackedMatrix {

    /** How the elements are stored. */
    public enum Encoding {
        /** bfloat16: the top 16 bits of an F32. */
        BF16,
        /** IEEE 754 binary16. */
        F16,
        /** int8 in blocks of 32, one F32 scale per block, laid out as {@link BlockQ8} describes. */
        Q8_0,
        /** GGUF's 4-bit K-quant blocks of 256 values in 144 bytes, read in place ({@link KQuantKernels}). */
        Q4_K
    }

    private final Encoding encoding;
    private final ByteBuffer bytes;
    private final int rows;
    private final int cols;
    private final int rowBytes;

    private PackedMatrix(Encoding encoding, ByteBuffer bytes, int rows, int cols) {
        this.encoding = encoding;
        this.bytes = bytes;
        this.rows = rows;
        this.cols = cols;
        this.rowBytes = (int) rowBytes(encoding, cols);
    }

    /**
     * A {@code rows × cols} matrix over {@code bytes}' remaining bytes, which the caller owns and keeps valid
     * while the matrix is used.
     *
     * @throws IllegalArgumentException naming the expected and found byte counts, or the column count a block
     *         encoding refuses
     */
    public static PackedMatrix of(Encoding encoding, ByteBuffer bytes, int rows, int cols) {
        Objects.requireNonNull(encoding, "encoding");
        Objects.requireNonNull(bytes, "bytes");
        if (rows < 0 || cols < 0) {
            throw new IllegalArgumentException("a packed matrix needs dimensions >= 0, got " + rows + " x " + cols);
        }
        if (encoding == Encoding.Q8_0 && cols % BlockQ8.BLOCK != 0) {
            throw new IllegalArgumentException("a Q8_0 matrix needs a column count that is a multiple of " + BlockQ8.BLOCK + ", got "
                    + cols);
        }
        if (encoding == Encoding.Q4_K && cols % KQuantKernels.Q4K_VALUES != 0) {
            throw new IllegalArgumentException("a Q4_K matrix needs a column count that is a multiple of " + KQuantKernels.Q4K_VALUES
                    + ", got " + cols);
        }
        long expected = rows * rowBytes(encoding, cols);
        if (bytes.remaining() != expected) {
            throw new IllegalArgumentException("a " + encoding + " matrix of " + rows + " x " + cols + " needs " + expected
                    + " bytes, the buffer holds " + bytes.remaining());
        }
        return new PackedMatrix(encoding, bytes.slice().order(ByteOrder.LITTLE_ENDIAN), rows, cols);
    }

    /**
     * Whether this JVM runs the SIMD kernels of packed weights (started with {@code --add-modules jdk.incubator.vector}).
     * Without them a 16-bit or 8-bit projection runs a scalar loop, slower than OpenBLAS over the same matrix in F32.
     */
    public static boolean simdKernels() {
        return PackedKernels.VECTOR;
    }

    /** Bytes of one row of {@code cols} elements in {@code encoding}. */
    public static long rowBytes(Encoding encoding, long cols) {
        return switch (encoding) {
            case Q8_0 -> BlockQ8.rowBytes(cols);
            case Q4_K -> cols / KQuantKernels.Q4K_VALUES * KQuantKernels.Q4K_BYTES;
            case BF16, F16 -> 2 * cols;
        };
    }

    /** The element encoding. */
    public Encoding encoding() {
        return encoding;
    }

    /** Rows. */
    public int rows() {
        return rows;
    }

    /** Columns. */
    public int cols() {
        return cols;
    }

    /** Bytes per row. */
    int rowBytes() {
        return rowBytes;
    }

    /** The bytes, position 0, little-endian; absolute reads only (the buffer is shared). */
    ByteBuffer bytes() {
        return bytes;
    }

    /** Widens row {@code row} into {@code out[offset, offset + cols)}. */
    void widenRow(int row, float[] out, int offset) {
        int base = row * rowBytes;
        switch (encoding) {
            case BF16 -> {
                for (int i = 0; i < cols; i++) {
                    out[offset + i] = Float.intBitsToFloat(bytes.getShort(base + 2 * i) << 16);
                }
            }
            case F16 -> {
                for (int i = 0; i < cols; i++) {
                    out[offset + i] = HalfPrecision.f16ToF32(bytes.getShort(base + 2 * i));
                }
            }
            case Q8_0 -> {
                int scales = base + cols;
                for (int b = 0; b < cols / BlockQ8.BLOCK; b++) {
                    float scale = bytes.getFloat(scales + b * Float.BYTES);
                    int q = base + b * BlockQ8.BLOCK;
                    for (int i = 0; i < BlockQ8.BLOCK; i++) {
                        out[offset + b * BlockQ8.BLOCK + i] = scale * bytes.get(q + i);
                    }
                }
            }
            case Q4_K -> KQuantKernels.widenRowQ4K(bytes, base, cols, out, offset);
        }
    }

    /** Widens rows {@code [from, to)} into {@code out} from index 0, row-major. */
    void widenRows(int from, int to, FloatBuffer out, float[] rowScratch) {
        for (int r = from; r < to; r++) {
            widenRow(r, rowScratch, 0);
            out.put((r - from) * cols, rowScratch, 0, cols);
        }
    }

    @Override
    public String toString() {
        return encoding + "[" + rows + ", " + cols + "]";
    }
}
