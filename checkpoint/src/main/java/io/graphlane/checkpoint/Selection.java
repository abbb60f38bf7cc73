package io.graphlane.checkpoint;

import io.graphlane.core.tensor.Shape;
import java.util.Arrays;

/**
 * A part of one tensor that a lease covers: the whole tensor, a range or an index set on one
 * axis, or a contiguous span of elements in row-major order. A selection is validated against a
 * shape before any byte is read, and describes its bytes as row-major blocks of the source so a
 * reader touches nothing outside them.
 */
public sealed interface Selection permits Selection.All, Selection.Range, Selection.Indices, Selection.Span {

    /** The whole tensor. */
    static Selection all() {
        return All.INSTANCE;
    }

    /** Indices [start, end) of {@code axis}, every other axis whole. */
    static Selection range(int axis, long start, long end) {
        return new Range(axis, start, end);
    }

    /** The listed indices of {@code axis}, in the order given (repeats allowed), every other axis whole. */
    static Selection indices(int axis, long... indices) {
        return new Indices(axis, indices);
    }

    /** Elements [start, end) of the tensor in row-major order, as a one-dimensional tensor. */
    static Selection span(long start, long end) {
        return new Span(start, end);
    }

    /**
     * The shape of the selected part of a tensor of {@code shape}.
     *
     * @throws IllegalArgumentException naming the axis, the bounds and the found dimension if it does not fit
     */
    Shape apply(Shape shape);

    /** True if this selects the whole of a tensor of {@code shape}. */
    boolean isWhole(Shape shape);

    /**
     * Visits the selected bytes as blocks (offset from the tensor's first byte, length), in the
     * selection's row-major order, adjacent blocks merged. {@code shape} must have been accepted by {@link #apply}.
     */
    void forEachBlock(Shape shape, int elementSize, BlockVisitor visitor);

    /** Receives one block of selected bytes. */
    @FunctionalInterface
    interface BlockVisitor {
        /** One run of {@code length} bytes starting {@code offset} bytes into the tensor. */
        void block(long offset, long length);
    }

    /** The smallest [first, end) byte range of the tensor that holds every selected byte. */
    default long[] coveringBytes(Shape shape, int elementSize) {
        long[] cover = {Long.MAX_VALUE, Long.MIN_VALUE};
        forEachBlock(shape, elementSize, (offset, length) -> {
            cover[0] = Math.min(cover[0], offset);
            cover[1] = Math.max(cover[1], offset + length);
        });
        if (cover[0] == Long.MAX_VALUE) {
            return new long[] {0, 0};
        }
        return cover;
    }

    /** The whole tensor. */
    record All() implements Selection {
        static final All INSTANCE = new All();

        @Override
        public Shape apply(Shape shape) {
            return shape;
        }

        @Override
        public boolean isWhole(Shape shape) {
            return true;
        }

        @Override
        public void forEachBlock(Shape shape, int elementSize, BlockVisitor visitor) {
            long bytes = shape.elementCount() * elementSize;
            if (bytes > 0) {
                visitor.block(0, bytes);
            }
        }

        @Override
        public String toString() {
            return "";
        }
    }

    /** Indices [start, end) of one axis. */
    record Range(int axis, long start, long end) implements Selection {
        @Override
        public Shape apply(Shape shape) {
            checkAxis(axis, shape);
            long dim = shape.dim(axis);
            if (start < 0 || end < start || end > dim) {
                throw new IllegalArgumentException("range [" + start + ", " + end + ") of axis " + axis
                        + " does not fit dimension " + dim + " of shape " + shape);
            }
            long[] dims = shape.dims();
            dims[axis] = end - start;
            return Shape.of(dims);
        }

        @Override
        public boolean isWhole(Shape shape) {
            return start == 0 && end == shape.dim(axis);
        }

        @Override
        public void forEachBlock(Shape shape, int elementSize, BlockVisitor visitor) {
            long inner = innerBytes(shape, axis, elementSize);
            long outer = outerCount(shape, axis);
            long stride = shape.dim(axis) * inner;
            long length = (end - start) * inner;
            if (length == 0) {
                return;
            }
            if (isWhole(shape)) {
                visitor.block(0, outer * stride);
                return;
            }
            for (long o = 0; o < outer; o++) {
                visitor.block(o * stride + start * inner, length);
            }
        }

        @Override
        public String toString() {
            return "[axis " + axis + ": " + start + ".." + end + ")";
        }
    }

    /** Listed indices of one axis. */
    record Indices(int axis, long[] indices) implements Selection {
        /** Copies the indices so the selection is immutable. */
        public Indices {
            indices = indices.clone();
        }

        @Override
        public long[] indices() {
            return indices.clone();
        }

        @Override
        public Shape apply(Shape shape) {
            checkAxis(axis, shape);
            long dim = shape.dim(axis);
            for (int i = 0; i < indices.length; i++) {
                if (indices[i] < 0 || indices[i] >= dim) {
                    throw new IllegalArgumentException("index " + indices[i] + " (position " + i + ") of axis " + axis
                            + " is outside dimension " + dim + " of shape " + shape);
                }
            }
            long[] dims = shape.dims();
            dims[axis] = indices.length;
            return Shape.of(dims);
        }

        @Override
        public boolean isWhole(Shape shape) {
            if (indices.length != shape.dim(axis)) {
                return false;
            }
            for (int i = 0; i < indices.length; i++) {
                if (indices[i] != i) {
                    return false;
                }
            }
            return true;
        }

        @Override
        public void forEachBlock(Shape shape, int elementSize, BlockVisitor visitor) {
            long inner = innerBytes(shape, axis, elementSize);
            long outer = outerCount(shape, axis);
            long stride = shape.dim(axis) * inner;
            if (inner == 0) {
                return;
            }
            for (long o = 0; o < outer; o++) {
                long runStart = -1;
                long runLength = 0;
                for (long index : indices) {
                    long offset = o * stride + index * inner;
                    if (runStart >= 0 && runStart + runLength == offset) {
                        runLength += inner;
                    } else {
                        if (runStart >= 0) {
                            visitor.block(runStart, runLength);
                        }
                        runStart = offset;
                        runLength = inner;
                    }
                }
                if (runStart >= 0) {
                    visitor.block(runStart, runLength);
                }
            }
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Indices other && other.axis == axis && Arrays.equals(other.indices, indices);
        }

        @Override
        public int hashCode() {
            return 31 * axis + Arrays.hashCode(indices);
        }

        @Override
        public String toString() {
            String list = indices.length <= 8 ? Arrays.toString(indices)
                    : Arrays.toString(Arrays.copyOf(indices, 8)).replace("]", ", … " + indices.length + " indices]");
            return "[axis " + axis + ": " + list + "]";
        }
    }

    /** Elements [start, end) in row-major order. */
    record Span(long start, long end) implements Selection {
        @Override
        public Shape apply(Shape shape) {
            if (start < 0 || end < start || end > shape.elementCount()) {
                throw new IllegalArgumentException("span [" + start + ", " + end + ") does not fit the "
                        + shape.elementCount() + " elements of shape " + shape);
            }
            return Shape.of(end - start);
        }

        @Override
        public boolean isWhole(Shape shape) {
            return start == 0 && end == shape.elementCount() && shape.rank() == 1;
        }

        @Override
        public void forEachBlock(Shape shape, int elementSize, BlockVisitor visitor) {
            if (end > start) {
                visitor.block(start * elementSize, (end - start) * elementSize);
            }
        }

        @Override
        public String toString() {
            return "[elements " + start + ".." + end + ")";
        }
    }

    private static void checkAxis(int axis, Shape shape) {
        if (axis < 0 || axis >= shape.rank()) {
            throw new IllegalArgumentException("axis " + axis + " does not exist in shape " + shape
                    + " of rank " + shape.rank());
        }
    }

    private static long innerBytes(Shape shape, int axis, int elementSize) {
        long inner = elementSize;
        for (int i = axis + 1; i < shape.rank(); i++) {
            inner *= shape.dim(i);
        }
        return inner;
    }

    private static long outerCount(Shape shape, int axis) {
        long outer = 1;
        for (int i = 0; i < axis; i++) {
            outer *= shape.dim(i);
        }
        return outer;
    }
}
