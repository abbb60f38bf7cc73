package io.graphlane.checkpoint.gguf;

import io.graphlane.core.tensor.DType;
import io.graphlane.core.tensor.Shape;
import io.graphlane.core.tensor.TensorSpec;
import java.util.Arrays;
import java.util.Objects;

/**
 * One validated GGUF tensor: its name, ggml type, ggml dimensions and its bytes [offset, offset +
 * byteSize) counted from the file's data section.
 *
 * <p>ggml lists dimensions innermost first: {@code ne[0]} is the row length (the contiguous axis),
 * so a Hugging Face {@code [out, in]} matrix is {@code ne = [in, out]}. {@link #shape()} gives the
 * row-major (Hugging Face) order, {@code ne} reversed.
 *
 * @param name the tensor's name in the file
 * @param type its ggml type
 * @param ne its ggml dimensions, innermost first (1 to 4 of them)
 * @param offset its offset from the start of the data section
 * @param byteSize its byte length
 */
public record GgufTensorInfo(String name, GgmlType type, long[] ne, long offset, long byteSize) {
    /** Copies {@code ne} and checks that the byte size is the type's for these dimensions. */
    public GgufTensorInfo {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(type, "type");
        ne = ne.clone();
        if (ne.length < 1 || byteSizeOf(type, ne) != byteSize) {
            throw new IllegalArgumentException("tensor '" + name + "': " + byteSize + " bytes do not hold " + type
                    + " " + Arrays.toString(ne));
        }
    }

    /** The byte size of a {@code type} tensor of dimensions {@code ne}, or -1 if it is not whole blocks or overflows. */
    static long byteSizeOf(GgmlType type, long[] ne) {
        try {
            long size = type.rowBytes(ne[0]);
            for (int i = 1; i < ne.length; i++) {
                size = Math.multiplyExact(size, ne[i]);
            }
            return size;
        } catch (IllegalArgumentException | ArithmeticException e) {
            return -1;
        }
    }

    @Override
    public long[] ne() {
        return ne.clone();
    }

    /** The number of dimensions. */
    public int rank() {
        return ne.length;
    }

    /** The values in one row ({@code ne[0]}). */
    public long rowLength() {
        return ne[0];
    }

    /** The row-major (Hugging Face) shape: {@code ne} reversed. */
    public Shape shape() {
        long[] dims = new long[ne.length];
        for (int i = 0; i < ne.length; i++) {
            dims[i] = ne[ne.length - 1 - i];
        }
        return Shape.of(dims);
    }

    /**
     * The dtype and shape under which a lease reads this tensor's bytes: an unquantized tensor as its
     * dtype in {@link #shape()}; a quantized one as {@code U8} with {@link #shape()}'s last axis replaced
     * by the bytes of one row, so a range of rows is a range of whole blocks.
     */
    public TensorSpec storedSpec() {
        if (!type.isQuantized()) {
            return new TensorSpec(type.dtype().orElseThrow(), shape());
        }
        long[] dims = shape().dims();
        dims[dims.length - 1] = type.rowBytes(ne[0]);
        return new TensorSpec(DType.U8, Shape.of(dims));
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof GgufTensorInfo t && t.name.equals(name) && t.type == type && Arrays.equals(t.ne, ne)
                && t.offset == offset && t.byteSize == byteSize;
    }

    @Override
    public int hashCode() {
        return Objects.hash(name, type, Arrays.hashCode(ne), offset, byteSize);
    }

    @Override
    public String toString() {
        return name + " " + type + " ne=" + Arrays.toString(ne) + " @" + offset + " (" + byteSize + " bytes)";
    }
}
