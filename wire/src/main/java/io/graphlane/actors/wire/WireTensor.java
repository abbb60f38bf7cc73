package io.graphlane.actors.wire;

import io.graphlane.core.tensor.DType;
import io.graphlane.core.tensor.Shape;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Objects;

/**
 * A tensor as it crosses nodes: dtype, shape and its raw little-endian bytes. The bytes are a read-only view;
 * their length always equals the shape's element count times the dtype's size.
 */
public final class WireTensor {
    private final DType dtype;
    private final Shape shape;
    private final ByteBuffer bytes;

    private WireTensor(DType dtype, Shape shape, ByteBuffer bytes) {
        this.dtype = dtype;
        this.shape = shape;
        this.bytes = bytes;
    }

    /**
     * A tensor over {@code bytes} (little-endian, from its position to its limit), copied.
     *
     * @throws WireFormatException if the byte count is not the shape's element count times the dtype's size
     */
    public static WireTensor of(DType dtype, Shape shape, ByteBuffer bytes) {
        requireBytes(dtype, shape, bytes.remaining());
        ByteBuffer copy = ByteBuffer.allocate(bytes.remaining()).order(ByteOrder.LITTLE_ENDIAN);
        copy.put(bytes.duplicate()).flip();
        return new WireTensor(dtype, shape, copy.asReadOnlyBuffer().order(ByteOrder.LITTLE_ENDIAN));
    }

    /** A tensor over {@code bytes} (little-endian), which it keeps without a copy: the caller gives them up. */
    static WireTensor wrapping(DType dtype, Shape shape, byte[] bytes) {
        requireBytes(dtype, shape, bytes.length);
        return new WireTensor(dtype, shape, ByteBuffer.wrap(bytes).asReadOnlyBuffer().order(ByteOrder.LITTLE_ENDIAN));
    }

    private static void requireBytes(DType dtype, Shape shape, int found) {
        Objects.requireNonNull(dtype, "dtype");
        Objects.requireNonNull(shape, "shape");
        long expected = shape.byteSize(dtype);
        if (found != expected) {
            throw new WireFormatException("tensor " + dtype + shape + " needs " + expected + " bytes, got " + found);
        }
    }

    /** An F32 tensor of {@code shape} holding {@code values} (row-major). */
    public static WireTensor ofFloats(Shape shape, float[] values) {
        if (shape.elementCount() != values.length) {
            throw new WireFormatException("tensor F32" + shape + " needs " + shape.elementCount() + " values, got " + values.length);
        }
        ByteBuffer b = ByteBuffer.allocate(values.length * Float.BYTES).order(ByteOrder.LITTLE_ENDIAN);
        b.asFloatBuffer().put(values);
        return new WireTensor(DType.F32, shape, b.asReadOnlyBuffer().order(ByteOrder.LITTLE_ENDIAN));
    }

    /** The element type. */
    public DType dtype() {
        return dtype;
    }

    /** The shape. */
    public Shape shape() {
        return shape;
    }

    /** A fresh read-only little-endian view of the bytes. */
    public ByteBuffer bytes() {
        return bytes.duplicate().order(ByteOrder.LITTLE_ENDIAN);
    }

    /**
     * The values of an F32 tensor, row-major.
     *
     * @throws WireFormatException if the dtype is not F32
     */
    public float[] toFloats() {
        if (dtype != DType.F32) {
            throw new WireFormatException("tensor " + dtype + shape + " read as F32; expected dtype F32, found " + dtype);
        }
        float[] out = new float[(int) shape.elementCount()];
        bytes().asFloatBuffer().get(out);
        return out;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof WireTensor t && t.dtype == dtype && t.shape.equals(shape) && t.bytes().equals(bytes());
    }

    @Override
    public int hashCode() {
        return Objects.hash(dtype, shape, bytes());
    }

    @Override
    public String toString() {
        return "WireTensor(" + dtype + shape + ")";
    }
}
