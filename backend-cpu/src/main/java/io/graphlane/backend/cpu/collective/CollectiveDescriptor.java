package io.graphlane.backend.cpu.collective;

import java.util.Arrays;
import java.util.Objects;

/**
 * What one member announces before any payload of one collective moves: the operation, the
 * reduction (all-reduce only), the dtype, its tensor's shape, its send counts (all-to-all only)
 * and the collective's sequence number in the group. Members agree when
 * {@link #differenceFrom} finds nothing against member 0's descriptor.
 *
 * @param sequence   the collective's number in the group, counted by each member from 0
 * @param kind       the operation
 * @param reduceOp   the reduction of an all-reduce, {@code null} otherwise
 * @param dtype      the element type, such as {@code F32}
 * @param rows       rows of the member's tensor
 * @param cols       columns of the member's tensor
 * @param sendCounts rows sent to each member (all-to-all), {@code null} otherwise
 */
public record CollectiveDescriptor(long sequence, CollectiveKind kind, ReduceOp reduceOp, String dtype, int rows, int cols, int[] sendCounts) {

    /** Copies the counts. */
    public CollectiveDescriptor {
        Objects.requireNonNull(kind, "kind");
        Objects.requireNonNull(dtype, "dtype");
        sendCounts = sendCounts == null ? null : sendCounts.clone();
    }

    /** The send counts (a copy), or {@code null} for a collective without them. */
    @Override
    public int[] sendCounts() {
        return sendCounts == null ? null : sendCounts.clone();
    }

    /** Rows this member sends to member {@code member} in an all-to-all. */
    int sendCount(int member) {
        return sendCounts[member];
    }

    /**
     * The first field in which this descriptor breaks agreement with {@code reference} (member 0's),
     * as {@code "field: expected X, found Y"}, or {@code null} when they agree. Which fields must be
     * equal depends on the operation: all of them for an all-reduce; all but the rows for an
     * all-gather; all but the rows and the counts for an all-to-all (counts are per member).
     */
    public String differenceFrom(CollectiveDescriptor reference) {
        if (sequence != reference.sequence) {
            return "sequence number: expected " + reference.sequence + ", found " + sequence;
        }
        if (kind != reference.kind) {
            return "operation: expected " + reference.kind + ", found " + kind;
        }
        if (reduceOp != reference.reduceOp) {
            return "reduction: expected " + reference.reduceOp + ", found " + reduceOp;
        }
        if (!dtype.equals(reference.dtype)) {
            return "dtype: expected " + reference.dtype + ", found " + dtype;
        }
        if (kind == CollectiveKind.ALL_REDUCE && (rows != reference.rows || cols != reference.cols)) {
            return "shape: expected [" + reference.rows + " x " + reference.cols + "], found [" + rows + " x " + cols + "]";
        }
        if (cols != reference.cols) {
            return "columns: expected " + reference.cols + ", found " + cols;
        }
        if (kind == CollectiveKind.ALL_TO_ALL && sendCounts.length != reference.sendCounts.length) {
            return "number of send counts: expected " + reference.sendCounts.length + ", found " + sendCounts.length;
        }
        return null;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof CollectiveDescriptor d && sequence == d.sequence && kind == d.kind && reduceOp == d.reduceOp
                && dtype.equals(d.dtype) && rows == d.rows && cols == d.cols && Arrays.equals(sendCounts, d.sendCounts);
    }

    @Override
    public int hashCode() {
        return Objects.hash(sequence, kind, reduceOp, dtype, rows, cols, Arrays.hashCode(sendCounts));
    }

    @Override
    public String toString() {
        return "#" + sequence + " " + kind + (reduceOp != null ? "(" + reduceOp.name().toLowerCase(java.util.Locale.ROOT) + ")" : "")
                + " " + dtype + " [" + rows + " x " + cols + "]" + (sendCounts != null ? " counts " + Arrays.toString(sendCounts) : "");
    }
}
