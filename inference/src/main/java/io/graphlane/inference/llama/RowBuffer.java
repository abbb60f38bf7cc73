package io.graphlane.inference.llama;

import io.graphlane.core.nn.NeuralOps;

/**
 * A reusable {@code capacity × cols} tensor handed out as views of its first rows, so a step's
 * intermediate values need no allocation once the buffer has seen the step's row count: it grows
 * (to at least double its capacity, its contents not kept) only when a step needs more rows.
 * Not thread-safe: it belongs to the lane that owns the stage.
 *
 * @param <T> the backend tensor
 */
final class RowBuffer<T> {
    private final NeuralOps<T> ops;
    private final int cols;
    private T storage;
    private int capacity;

    RowBuffer(NeuralOps<T> ops, int cols) {
        this.ops = ops;
        this.cols = cols;
    }

    /** A view of the first {@code rows} rows, valid until the next call or {@link #release}; its values are unspecified. */
    T rows(int rows) {
        if (rows > capacity) {
            if (storage != null) {
                ops.release(storage);
                storage = null;
            }
            int grown = (int) Math.min(Integer.MAX_VALUE, Math.max(rows, 2L * capacity));
            storage = ops.allocate(grown, cols);
            capacity = grown;
        }
        return ops.rowSlice(storage, 0, rows);
    }

    /** Frees the storage; a later {@link #rows} allocates again. */
    void release() {
        if (storage != null) {
            ops.release(storage);
            storage = null;
            capacity = 0;
        }
    }
}
