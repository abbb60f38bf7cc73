package io.graphlane.checkpoint.gguf;

import io.graphlane.checkpoint.CheckpointException;
import java.nio.file.Path;

/** A GGUF file that breaks the format or that graphlane does not read: the message names the file and the field. */
public final class GgufFormatException extends CheckpointException {
    private static final long serialVersionUID = 1L;

    private final transient Path file;

    /** An error in {@code file}; {@code problem} names the field and the expected and found values. */
    public GgufFormatException(Path file, String problem) {
        super(file + ": " + problem);
        this.file = file;
    }

    /** As {@link #GgufFormatException(Path, String)}, keeping the low-level cause. */
    public GgufFormatException(Path file, String problem, Throwable cause) {
        super(file + ": " + problem, cause);
        this.file = file;
    }

    /** The file at fault. */
    public Path file() {
        return file;
    }
}
