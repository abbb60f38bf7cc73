package io.graphlane.backend.gpu.nccl;

import java.util.Objects;

/**
 * What one member is about to do in a collective: the members must agree on it before any
 * payload moves, or NCCL would hang or mix data.
 *
 * @param sequence the collective's number in this communicator (every member counts the same)
 * @param operation the collective, such as {@code allReduce}
 * @param dtype the element type
 * @param rows rows of the member's operand
 * @param cols columns of the member's operand
 */
public record CollectiveDescriptor(long sequence, String operation, String dtype, int rows, int cols) {
    public CollectiveDescriptor {
        Objects.requireNonNull(operation, "operation");
        Objects.requireNonNull(dtype, "dtype");
    }

    @Override
    public String toString() {
        return "#" + sequence + " " + operation + " " + dtype + "[" + rows + " x " + cols + "]";
    }
}
