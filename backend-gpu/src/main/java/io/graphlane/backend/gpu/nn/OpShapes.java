package io.graphlane.backend.gpu.nn;

import io.graphlane.core.nn.ShapeMismatchException;

/**
 * The operand checks of the GPU neural ops, on plain sizes so they run (and are tested) without
 * a device. Each throws {@link ShapeMismatchException} naming the operation, the operand, the
 * expected and the found size, before anything is enqueued.
 */
final class OpShapes {
    private OpShapes() {
    }

    static void requireSame(String operation, String operand, int rows, int cols, int foundRows, int foundCols) {
        if (rows != foundRows || cols != foundCols) {
            throw new ShapeMismatchException(operation, operand, rows + " x " + cols, foundRows + " x " + foundCols);
        }
    }

    static void requireVector(String operation, String operand, int cols, int foundRows, int foundCols) {
        if (foundRows != 1 || foundCols != cols) {
            throw new ShapeMismatchException(operation, operand, "1 x " + cols, foundRows + " x " + foundCols);
        }
    }

    static void requireLinear(int n, int k, int weightRows, int weightCols, int outRows, int outCols) {
        ShapeMismatchException.require("linear", "weight", "cols (input features of x)", k, weightCols);
        ShapeMismatchException.require("linear", "out", "rows (rows of x)", n, outRows);
        ShapeMismatchException.require("linear", "out", "cols (rows of weight)", weightRows, outCols);
    }

    static void requireRowRange(int rows, int fromRow, int toRow) {
        if (fromRow < 0 || toRow < fromRow || toRow > rows) {
            throw new IndexOutOfBoundsException("rowSlice: rows [" + fromRow + ", " + toRow + ") are outside [0, " + rows + ")");
        }
    }

    static void requireIds(int[] ids, int tableRows) {
        for (int i = 0; i < ids.length; i++) {
            if (ids[i] < 0 || ids[i] >= tableRows) {
                throw new IndexOutOfBoundsException("embedding: token id " + ids[i] + " at position " + i
                        + " is outside the vocabulary [0, " + tableRows + ")");
            }
        }
    }

    static void requireHeads(String operation, int cols, int headCount, int headDim) {
        if (headDim <= 0 || headCount <= 0 || (long) headCount * headDim != cols) {
            throw new ShapeMismatchException(operation, "x", "cols = heads x headDim = " + headCount + " x " + headDim, "cols = " + cols);
        }
    }

    static void requireRope(int cols, int headDim) {
        requireRope(cols, headDim, headDim);
    }

    /** Checks rope operands: cols a multiple of an even head width, and a rotary width (even) of at most the head. */
    static void requireRope(int cols, int headDim, int rotaryDim) {
        if (headDim <= 0 || headDim % 2 != 0 || cols % headDim != 0) {
            throw new ShapeMismatchException("rope", "x", "cols a multiple of an even headDim " + headDim, "cols = " + cols);
        }
        if (rotaryDim <= 0 || rotaryDim % 2 != 0 || rotaryDim > headDim) {
            throw new ShapeMismatchException("rope", "table", "an even rotary width of at most headDim " + headDim,
                    "rotaryDim = " + rotaryDim);
        }
    }

    /**
     * The most cache positions any query row attends to within {@code window} (at least 1, or {@code NO_WINDOW}):
     * {@code min(positions[r] + 1, window)}, which sizes the attention kernel's shared memory; 0 for no rows.
     */
    static int attentionSpan(int[] positions, int window) {
        if (window < 1) {
            throw new IllegalArgumentException("attention: window must be at least 1 position (or NO_WINDOW), got " + window);
        }
        int span = 0;
        for (int p : positions) {
            span = Math.max(span, Math.min(p + 1, window));
        }
        return span;
    }

    /** Checks attention operands; returns the largest position attended, which sizes the kernel's shared memory. */
    static int requireAttention(int qRows, int qCols, int keyRows, int keyCols, int valueRows, int valueCols, int[] positions,
                                int headCount, int kvHeadCount, int headDim, int outRows, int outCols) {
        requireHeads("attention", qCols, headCount, headDim);
        if (kvHeadCount <= 0 || headCount % kvHeadCount != 0) {
            throw new ShapeMismatchException("attention", "kvHeadCount", "a divisor of headCount " + headCount, String.valueOf(kvHeadCount));
        }
        ShapeMismatchException.require("attention", "keys", "cols (kvHeads x headDim)", (long) kvHeadCount * headDim, keyCols);
        ShapeMismatchException.require("attention", "values", "cols (kvHeads x headDim)", (long) kvHeadCount * headDim, valueCols);
        ShapeMismatchException.require("attention", "values", "rows (cache length)", keyRows, valueRows);
        ShapeMismatchException.require("attention", "positions", "length (rows of q)", qRows, positions.length);
        requireSame("attention", "out", qRows, qCols, outRows, outCols);
        int max = -1;
        for (int i = 0; i < positions.length; i++) {
            if (positions[i] < 0 || positions[i] >= keyRows) {
                throw new IndexOutOfBoundsException("attention: position " + positions[i] + " of row " + i
                        + " is outside the key/value cache [0, " + keyRows + ")");
            }
            max = Math.max(max, positions[i]);
        }
        return max;
    }
}
