package io.graphlane.checkpoint;

import io.graphlane.checkpoint.safetensors.SafetensorsHeader;
import io.graphlane.checkpoint.safetensors.TensorEntry;
import io.graphlane.core.tensor.TensorSpec;
import java.nio.file.Path;
import java.util.Objects;

/**
 * Where one validated tensor lives: its shard (the file name as the checkpoint names it, and its
 * path), the shard's safetensors header (null for a tensor of another format, such as GGUF), the
 * tensor's entry, and the absolute file offset where the entry's offsets start.
 */
public record TensorLocation(String shardName, Path shardPath, SafetensorsHeader header, TensorEntry entry,
                             long dataStart) {

    /** Requires the names, the path, the entry and a non-negative data start. */
    public TensorLocation {
        Objects.requireNonNull(shardName, "shardName");
        Objects.requireNonNull(shardPath, "shardPath");
        Objects.requireNonNull(entry, "entry");
        if (dataStart < 0) {
            throw new IllegalArgumentException("tensor '" + entry.name() + "': data start " + dataStart + " is negative");
        }
    }

    /** A tensor of a safetensors shard: its offsets start at the header's data region. */
    public TensorLocation(String shardName, Path shardPath, SafetensorsHeader header, TensorEntry entry) {
        this(shardName, shardPath, Objects.requireNonNull(header, "header"), entry, header.dataStart());
    }

    /**
     * A tensor of a file in another format, validated by that format's reader: its bytes are
     * {@code entry}'s [begin, end) counted from absolute file offset {@code dataStart}.
     */
    public static TensorLocation inFile(String shardName, Path shardPath, TensorEntry entry, long dataStart) {
        return new TensorLocation(shardName, shardPath, null, entry, dataStart);
    }

    /** The tensor's name. */
    public String name() {
        return entry.name();
    }

    /** The tensor's dtype and shape. */
    public TensorSpec spec() {
        return entry.spec();
    }

    /** The absolute file offset of the tensor's first byte. */
    public long fileOffset() {
        return dataStart + entry.begin();
    }
}
