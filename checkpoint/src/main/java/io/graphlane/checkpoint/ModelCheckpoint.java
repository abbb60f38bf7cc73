package io.graphlane.checkpoint;

import io.graphlane.checkpoint.config.ModelConfig;
import io.graphlane.checkpoint.config.ModelTensors;
import java.nio.file.Path;
import java.util.Objects;

/**
 * A model directory validated as a load validates it: config.json, every weight header, the shard
 * index, and the checkpoint against its architecture (every needed tensor with its shape). Reads no
 * tensor byte; {@link #openSource} hands out leases on it.
 *
 * @param dir the model directory
 * @param config the validated configuration
 * @param catalog the validated tensor catalogue
 */
public record ModelCheckpoint(Path dir, ModelConfig config, CheckpointCatalog catalog) {
    /** Requires every component. */
    public ModelCheckpoint {
        Objects.requireNonNull(dir, "dir");
        Objects.requireNonNull(config, "config");
        Objects.requireNonNull(catalog, "catalog");
    }

    /**
     * Opens and validates the model directory {@code dir}.
     *
     * @throws CheckpointException naming the file and the problem of the first rule broken
     */
    public static ModelCheckpoint open(Path dir) {
        CheckpointCatalog catalog = CheckpointCatalog.open(dir);
        ModelConfig config = ModelConfig.read(dir.resolve(ModelConfig.FILE_NAME));
        ModelTensors.check(dir, config, catalog);
        return new ModelCheckpoint(dir, config, catalog);
    }

    /** A lease source on this checkpoint with at most {@code maxOpenShards} shard files open at once. */
    public CheckpointSource openSource(int maxOpenShards) {
        return CheckpointSource.of(catalog, maxOpenShards);
    }
}
