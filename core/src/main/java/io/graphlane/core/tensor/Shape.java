package io.graphlane.core.tensor;

import java.util.Arrays;

/** An immutable tensor shape: non-negative dimensions whose element count fits in a {@code long}. */
public final class Shape {
    private static final Shape SCALAR = new Shape(new long[0], 1);

    private final long[] dims;
    private final long elementCount;

    private Shape(long[] dims, long elementCount) {
        this.dims = dims;
        this.elementCount = elementCount;
    }

    /**
     * A shape of these dimensions.
     *
     * @throws IllegalArgumentException naming the dimension if one is negative, or if the element count overflows
     */
    public static Shape of(long... dims) {
        if (dims.length == 0) {
            return SCALAR;
        }
        long count = 1;
        for (int i = 0; i < dims.length; i++) {
            if (dims[i] < 0) {
                throw new IllegalArgumentException("dimension " + i + " of shape " + Arrays.toString(dims) + " is negative");
            }
            try {
                count = Math.multiplyExact(count, dims[i]);
            } catch (ArithmeticException e) {
                throw new IllegalArgumentException("shape " + Arrays.toString(dims) + " has more elements than fit in a long");
            }
        }
        return new Shape(dims.clone(), count);
    }

    public int rank() {
        return dims.length;
    }

    public long dim(int axis) {
        return dims[axis];
    }

    public long[] dims() {
        return dims.clone();
    }

    public long elementCount() {
        return elementCount;
    }

    /** Bytes this shape takes in {@code dtype}, or an exception if that overflows a {@code long}. */
    public long byteSize(DType dtype) {
        try {
            return Math.multiplyExact(elementCount, (long) dtype.byteSize());
        } catch (ArithmeticException e) {
            throw new IllegalArgumentException("shape " + this + " in " + dtype + " has more bytes than fit in a long");
        }
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Shape other && Arrays.equals(dims, other.dims);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(dims);
    }

    @Override
    public String toString() {
        return Arrays.toString(dims);
    }
}
