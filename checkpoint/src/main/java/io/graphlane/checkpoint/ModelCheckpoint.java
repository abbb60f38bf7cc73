package io.graphlane.checkpoint;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.graphlane.checkpoint.config.ModelConfig;
import io.graphlane.checkpoint.config.ModelTensors;
import io.graphlane.checkpoint.gguf.GgufCheckpoint;
import io.graphlane.checkpoint.recipe.DerivedWeight;
import io.graphlane.checkpoint.safetensors.TensorEntry;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * A model validated as a load validates it: config.json, every weight header, the shard index, and the checkpoint
 * against its architecture (every needed tensor with its shape). Reads no weight byte; {@link #openSource} hands out
 * leases on it. The model is a Hugging Face directory, or a GGUF file (or a directory holding one and no safetensors
 * weights), whose metadata is read as a config.json through the same reader and checks, and whose tensors are the
 * Hugging Face weights derived from the file's (renamed, q/k rows un-permuted, quantized blocks decoded).
 *
 * @param dir        the model directory, or the GGUF file
 * @param config     the validated configuration
 * @param catalog    the validated tensor catalogue (a GGUF file's under its own tensor names)
 * @param gguf       the GGUF file, or null for a Hugging Face directory
 * @param rawConfig  the configuration as a config.json object where it was derived (GGUF), else null (read config.json)
 */
public record ModelCheckpoint(Path dir, ModelConfig config, CheckpointCatalog catalog, GgufCheckpoint gguf, ObjectNode rawConfig) {
    /** Requires every component. */
    public ModelCheckpoint {
        Objects.requireNonNull(dir, "dir");
        Objects.requireNonNull(config, "config");
        Objects.requireNonNull(catalog, "catalog");
    }

    /** A Hugging Face model directory's checkpoint. */
    public ModelCheckpoint(Path dir, ModelConfig config, CheckpointCatalog catalog) {
        this(dir, config, catalog, null, null);
    }

    /**
     * Opens and validates the model {@code path} names: a Hugging Face model directory, a GGUF file, or a directory
     * holding exactly one GGUF file and no safetensors weights.
     *
     * @throws CheckpointException naming the file and the problem of the first rule broken
     */
    public static ModelCheckpoint open(Path path) {
        if (isGguf(path)) {
            return openGguf(path);
        }
        CheckpointCatalog catalog = CheckpointCatalog.open(path);
        ModelConfig config = ModelConfig.read(path.resolve(ModelConfig.FILE_NAME));
        ModelTensors.check(path, config, catalog);
        return new ModelCheckpoint(path, config, catalog);
    }

    /**
     * True if {@code path} is read as GGUF: a regular file (whatever its name: {@link GgufCheckpoint#locate} refuses
     * one that is not named {@code .gguf}), or a directory with {@code .gguf} files and neither
     * {@code model.safetensors} nor its shard index.
     */
    public static boolean isGguf(Path path) {
        if (Files.isRegularFile(path)) {
            return true;
        }
        return Files.isDirectory(path) && !Files.exists(path.resolve(CheckpointCatalog.SINGLE_FILE))
                && !Files.exists(path.resolve(ShardIndex.FILE_NAME)) && GgufCheckpoint.isGguf(path);
    }

    private static ModelCheckpoint openGguf(Path path) {
        GgufCheckpoint gguf = GgufCheckpoint.open(path);
        Path file = gguf.file().file();
        ObjectNode raw;
        ModelConfig config;
        Map<String, TensorLocation> hf = new LinkedHashMap<>();
        try (CheckpointSource source = gguf.openSource()) {
            raw = gguf.hfConfig(source);
            config = ModelConfig.of(configName(file), raw);
            // the derived weights' specs, checked as a safetensors checkpoint's tensors are (names, shapes, dtypes, extras)
            for (Map.Entry<String, DerivedWeight> w : gguf.weights(source).entrySet()) {
                TensorEntry entry = new TensorEntry(w.getKey(), w.getValue().output(), 0, w.getValue().output().byteSize());
                hf.put(w.getKey(), TensorLocation.inFile(file.getFileName().toString(), file, entry, 0));
            }
        }
        ModelTensors.check(file, config, CheckpointCatalog.ofFile(file.toAbsolutePath().getParent(), "gguf", hf));
        return new ModelCheckpoint(file, config, gguf.catalog(), gguf, raw);
    }

    /** How errors name a GGUF file's metadata read as config.json. */
    public static Path configName(Path ggufFile) {
        return Path.of(ggufFile + " (metadata as " + ModelConfig.FILE_NAME + ")");
    }

    /** The GGUF file this checkpoint reads, if it is one. */
    public Optional<GgufCheckpoint> ggufFile() {
        return Optional.ofNullable(gguf);
    }

    /**
     * A lease source on this checkpoint with at most {@code maxOpenShards} shard files open at once. On a GGUF file it
     * also derives the Hugging Face weights ({@link CheckpointSource#recipe}), which loaders read through their recipes.
     */
    public CheckpointSource openSource(int maxOpenShards) {
        if (gguf == null) {
            return CheckpointSource.of(catalog, maxOpenShards);
        }
        return CheckpointSource.of(catalog, maxOpenShards, source -> {
            Map<String, io.graphlane.checkpoint.recipe.Recipe> recipes = new LinkedHashMap<>();
            gguf.weights(source).forEach((name, w) -> recipes.put(name, w.recipe()));
            return recipes;
        });
    }
}
