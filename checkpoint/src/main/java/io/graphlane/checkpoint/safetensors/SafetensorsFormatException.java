package io.graphlane.checkpoint.safetensors;

import io.graphlane.checkpoint.CheckpointException;
import java.nio.file.Path;

/** A safetensors file that breaks the format: the message names the file, the tensor and the field. */
public final class SafetensorsFormatException extends CheckpointException {
    private static final long serialVersionUID = 1L;

    private final transient Path file;

    /** An error in {@code file}; {@code problem} names the tensor/field and the expected and found values. */
    public SafetensorsFormatException(Path file, String problem) {
        super(file + ": " + problem);
        this.file = file;
    }

    /** As {@link #SafetensorsFormatException(Path, String)}, keeping the low-level cause. */
    public SafetensorsFormatException(Path file, String problem, Throwable cause) {
        super(file + ": " + problem, cause);
        this.file = file;
    }

    /** The file at fault. */
    public Path file() {
        return file;
    }
}
