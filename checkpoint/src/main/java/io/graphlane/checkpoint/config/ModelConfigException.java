package io.graphlane.checkpoint.config;

import io.graphlane.checkpoint.CheckpointException;

/** A config.json graphlane refuses, or a checkpoint that contradicts it; the message names the file and the field or tensor. */
public final class ModelConfigException extends CheckpointException {
    private static final long serialVersionUID = 1L;

    /** An error whose message names the file first. */
    public ModelConfigException(String message) {
        super(message);
    }
}
