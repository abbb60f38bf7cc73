package io.graphlane.checkpoint;

import io.graphlane.checkpoint.safetensors.SafetensorsHeader;
import io.graphlane.checkpoint.safetensors.TensorEntry;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * The validated tensor catalogue of a model directory: one {@code model.safetensors}, or the
 * shards a {@code model.safetensors.index.json} lists. Opening it reads and validates every
 * header and cross-checks index and shards (no missing shard, every mapped tensor present in its
 * shard, no tensor in two shards, no shard tensor the index leaves out); no tensor byte is read.
 */
public final class CheckpointCatalog {
    /** The weights file of an unsharded checkpoint. */
    public static final String SINGLE_FILE = "model.safetensors";

    private final Path dir;
    private final String format;
    private final boolean sharded;
    private final List<SafetensorsHeader> shards;
    private final SortedMap<String, TensorLocation> tensors;

    private CheckpointCatalog(Path dir, boolean sharded, List<SafetensorsHeader> shards,
                              SortedMap<String, TensorLocation> tensors) {
        this(dir, "safetensors", sharded, shards, tensors);
    }

    private CheckpointCatalog(Path dir, String format, boolean sharded, List<SafetensorsHeader> shards,
                              SortedMap<String, TensorLocation> tensors) {
        this.dir = dir;
        this.format = format;
        this.sharded = sharded;
        this.shards = Collections.unmodifiableList(shards);
        this.tensors = Collections.unmodifiableSortedMap(tensors);
    }

    /**
     * Opens and validates the weights of the model directory {@code dir}.
     *
     * @throws CheckpointException naming the file and problem of the first rule broken
     */
    public static CheckpointCatalog open(Path dir) {
        if (!Files.isDirectory(dir)) {
            throw new CheckpointException(dir + ": not a directory (expected a model directory with "
                    + SINGLE_FILE + " or " + ShardIndex.FILE_NAME + ")");
        }
        Path single = dir.resolve(SINGLE_FILE);
        Path index = dir.resolve(ShardIndex.FILE_NAME);
        boolean hasSingle = Files.exists(single);
        boolean hasIndex = Files.exists(index);
        if (hasSingle && hasIndex) {
            throw new CheckpointException(dir + ": holds both " + SINGLE_FILE + " and " + ShardIndex.FILE_NAME
                    + "; keep only one layout");
        }
        if (hasSingle) {
            return openSingle(dir, single);
        }
        if (hasIndex) {
            return openSharded(dir, ShardIndex.read(index));
        }
        throw new CheckpointException(dir + ": no " + SINGLE_FILE + " and no " + ShardIndex.FILE_NAME
                + " (expected the weights of a Hugging Face model directory)");
    }

    /**
     * The catalogue of one weights file in another format ({@code format}, e.g. {@code "gguf"}) whose
     * reader has validated every tensor in {@code tensors}; {@link #shards()} is then empty.
     */
    public static CheckpointCatalog ofFile(Path dir, String format, Map<String, TensorLocation> tensors) {
        java.util.Objects.requireNonNull(dir, "dir");
        java.util.Objects.requireNonNull(format, "format");
        return new CheckpointCatalog(dir, format, false, List.of(), new TreeMap<>(tensors));
    }

    private static CheckpointCatalog openSingle(Path dir, Path file) {
        SafetensorsHeader header = SafetensorsHeader.read(file);
        SortedMap<String, TensorLocation> tensors = new TreeMap<>();
        for (TensorEntry e : header.tensors().values()) {
            tensors.put(e.name(), new TensorLocation(SINGLE_FILE, file, header, e));
        }
        return new CheckpointCatalog(dir, false, List.of(header), tensors);
    }

    private static CheckpointCatalog openSharded(Path dir, ShardIndex index) {
        Path realDir;
        try {
            realDir = dir.toRealPath();
        } catch (IOException e) {
            throw new CheckpointException(dir + ": cannot resolve the model directory: " + e, e);
        }
        List<SafetensorsHeader> headers = new ArrayList<>();
        SortedMap<String, TensorLocation> tensors = new TreeMap<>();
        for (String shard : index.shards()) {
            Path path = dir.resolve(shard).normalize();
            if (!Files.isRegularFile(path)) {
                String mappedBy = index.weightMap().entrySet().stream().filter(e -> e.getValue().equals(shard))
                        .map(Map.Entry::getKey).findFirst().orElse("?");
                throw new CheckpointException(index.file() + ": shard \"" + shard + "\" (holding '" + mappedBy
                        + "' and others) is missing: no file " + path);
            }
            try {
                if (!path.toRealPath().startsWith(realDir)) {
                    throw new CheckpointException(index.file() + ": shard \"" + shard + "\" resolves to "
                            + path.toRealPath() + ", outside the model directory " + realDir);
                }
            } catch (IOException e) {
                throw new CheckpointException(index.file() + ": cannot resolve shard \"" + shard + "\": " + e, e);
            }
            SafetensorsHeader header = SafetensorsHeader.read(path);
            headers.add(header);
            for (TensorEntry e : header.tensors().values()) {
                TensorLocation other = tensors.get(e.name());
                if (other != null) {
                    throw new CheckpointException(index.file() + ": tensor '" + e.name() + "' is held by two shards, \""
                            + other.shardName() + "\" and \"" + shard + "\"");
                }
                String mapped = index.weightMap().get(e.name());
                if (mapped == null) {
                    throw new CheckpointException(index.file() + ": shard \"" + shard + "\" holds tensor '" + e.name()
                            + "' which field 'weight_map' does not list");
                }
                tensors.put(e.name(), new TensorLocation(shard, path, header, e));
            }
        }
        for (Map.Entry<String, String> mapped : index.weightMap().entrySet()) {
            TensorLocation found = tensors.get(mapped.getKey());
            if (found == null || !found.shardName().equals(mapped.getValue())) {
                throw new CheckpointException(index.file() + ": field 'weight_map' maps tensor '" + mapped.getKey()
                        + "' to shard \"" + mapped.getValue() + "\", which does not hold it"
                        + (found == null ? "" : " (it is in \"" + found.shardName() + "\")"));
            }
        }
        return new CheckpointCatalog(dir, true, headers, tensors);
    }

    /** The model directory. */
    public Path dir() {
        return dir;
    }

    /** The weights format: {@code "safetensors"}, or the format of a catalogue made by {@link #ofFile}. */
    public String format() {
        return format;
    }

    /** True if the weights come from an index and shards. */
    public boolean isSharded() {
        return sharded;
    }

    /** The validated safetensors headers of the weight files, in index order (empty for another format). */
    public List<SafetensorsHeader> shards() {
        return shards;
    }

    /** Every tensor, sorted by name. */
    public SortedMap<String, TensorLocation> tensors() {
        return tensors;
    }

    /** True if the checkpoint holds a tensor of this name. */
    public boolean contains(String name) {
        return tensors.containsKey(name);
    }

    /**
     * The tensor named {@code name}.
     *
     * @throws CheckpointException naming the directory and tensor if there is no such tensor
     */
    public TensorLocation tensor(String name) {
        TensorLocation loc = tensors.get(name);
        if (loc == null) {
            throw new CheckpointException(dir + ": no tensor '" + name + "' in the checkpoint (" + tensors.size()
                    + " tensors)");
        }
        return loc;
    }

    /** The sum of every tensor's byte length. */
    public long totalBytes() {
        long total = 0;
        for (TensorLocation t : tensors.values()) {
            total += t.entry().byteLength();
        }
        return total;
    }
}
