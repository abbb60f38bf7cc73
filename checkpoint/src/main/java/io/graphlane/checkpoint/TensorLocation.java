package io.graphlane.checkpoint;

import io.graphlane.checkpoint.safetensors.SafetensorsHeader;
import io.graphlane.checkpoint.safetensors.TensorEntry;
import io.graphlane.core.tensor.TensorSpec;
import java.nio.file.Path;

/**
 * Where one validated tensor lives: its shard (the file name as the checkpoint names it, and its
 * path), the shard's header and the tensor's entry in it.
 */
public record TensorLocation(String shardName, Path shardPath, SafetensorsHeader header, TensorEntry entry) {

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
        return header.dataStart() + entry.begin();
    }
}
