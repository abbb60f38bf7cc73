package io.graphlane.core.nn;

import io.graphlane.core.GraphlaneException;

/** A neural operation was given an operand of the wrong shape; nothing was computed. */
public final class ShapeMismatchException extends GraphlaneException {
    private static final long serialVersionUID = 1L;

    /** An error naming the operation, the operand and its expected and found shapes. */
    public ShapeMismatchException(String operation, String operand, String expected, String found) {
        super(operation + ": operand " + operand + " should be " + expected + " but is " + found);
    }

    /** Throws unless {@code found == expected}, naming the operation, operand and dimension. */
    public static void require(String operation, String operand, String dimension, long expected, long found) {
        if (expected != found) {
            throw new ShapeMismatchException(operation, operand, dimension + " = " + expected, dimension + " = " + found);
        }
    }
}
