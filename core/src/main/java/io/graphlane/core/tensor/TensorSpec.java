package io.graphlane.core.tensor;

import java.util.Objects;

/** The dtype and shape of one tensor. */
public record TensorSpec(DType dtype, Shape shape) {
    public TensorSpec {
        Objects.requireNonNull(dtype, "dtype");
        Objects.requireNonNull(shape, "shape");
    }

    public static TensorSpec of(DType dtype, long... dims) {
        return new TensorSpec(dtype, Shape.of(dims));
    }

    /** Bytes of a dense row-major tensor of this spec. */
    public long byteSize() {
        return shape.byteSize(dtype);
    }

    @Override
    public String toString() {
        return dtype + shape.toString();
    }
}
