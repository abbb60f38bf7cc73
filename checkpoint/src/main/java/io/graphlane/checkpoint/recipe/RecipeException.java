package io.graphlane.checkpoint.recipe;

import io.graphlane.checkpoint.CheckpointException;

/** A recipe step that does not fit its inputs (shape, dtype, axis, permutation or byte count), refused before any byte is read. */
public final class RecipeException extends CheckpointException {
    private static final long serialVersionUID = 1L;

    /** An error whose message names the step, the input and the expected and found values. */
    public RecipeException(String message) {
        super(message);
    }
}
