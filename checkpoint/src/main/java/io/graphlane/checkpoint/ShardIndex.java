package io.graphlane.checkpoint;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.graphlane.checkpoint.json.StrictJson;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.Collections;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * The {@code model.safetensors.index.json} of a sharded checkpoint: tensor name → shard file. A
 * parsed index has a non-empty weight map, no empty tensor name, and only shard paths that stay
 * inside the model directory; it does not yet know whether the shards exist or agree (that is
 * {@link CheckpointCatalog}'s check).
 */
public final class ShardIndex {
    /** The file name Hugging Face gives a shard index. */
    public static final String FILE_NAME = "model.safetensors.index.json";

    /** The largest index file read, in bytes. */
    public static final long MAX_INDEX_BYTES = 100_000_000L;

    private final Path file;
    private final Map<String, String> weightMap;

    private ShardIndex(Path file, Map<String, String> weightMap) {
        this.file = file;
        this.weightMap = Collections.unmodifiableMap(weightMap);
    }

    /**
     * Reads and validates the index at {@code file}.
     *
     * @throws CheckpointException naming the file and the entry at fault
     */
    public static ShardIndex read(Path file) {
        String text;
        try {
            long size = Files.size(file);
            if (size > MAX_INDEX_BYTES) {
                throw new CheckpointException(file + ": index is " + size + " bytes, over the limit of " + MAX_INDEX_BYTES);
            }
            byte[] bytes = Files.readAllBytes(file);
            text = StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(java.nio.ByteBuffer.wrap(bytes)).toString();
        } catch (CharacterCodingException e) {
            throw new CheckpointException(file + ": index is not valid UTF-8", e);
        } catch (IOException e) {
            throw new CheckpointException(file + ": cannot read the index: " + e, e);
        }
        StrictJson.Result parsed = StrictJson.parse(text);
        JsonNode root = parsed.node().orElseThrow(() ->
                new CheckpointException(file + ": index is not valid JSON: " + parsed.error()));
        if (!root.isObject()) {
            throw new CheckpointException(file + ": index is not a JSON object");
        }
        JsonNode map = root.get("weight_map");
        if (map == null || map.isNull()) {
            throw new CheckpointException(file + ": index has no field 'weight_map'");
        }
        if (!map.isObject()) {
            throw new CheckpointException(file + ": field 'weight_map' is not an object of tensor name → shard file");
        }
        if (map.isEmpty()) {
            throw new CheckpointException(file + ": field 'weight_map' is empty, expected at least one tensor");
        }
        Path dir = file.toAbsolutePath().getParent();
        Map<String, String> weightMap = new TreeMap<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = map.properties().iterator(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            String name = e.getKey();
            if (name.isEmpty()) {
                throw new CheckpointException(file + ": field 'weight_map' has an empty tensor name");
            }
            if (!e.getValue().isTextual()) {
                throw new CheckpointException(file + ": field 'weight_map." + name + "' is not a shard file name (found "
                        + e.getValue() + ")");
            }
            String shard = e.getValue().textValue();
            checkShardPath(file, dir, name, shard);
            weightMap.put(name, shard);
        }
        return new ShardIndex(file, weightMap);
    }

    private static void checkShardPath(Path file, Path dir, String tensor, String shard) {
        String where = file + ": field 'weight_map." + tensor + "': shard path \"" + shard + "\"";
        if (shard.isEmpty()) {
            throw new CheckpointException(where + " is empty");
        }
        if (shard.indexOf('\0') >= 0 || shard.startsWith("/") || shard.startsWith("\\")
                || (shard.length() > 1 && shard.charAt(1) == ':')) {
            throw new CheckpointException(where + " is absolute, expected a file name inside the model directory");
        }
        for (String segment : shard.split("[/\\\\]")) {
            if (segment.equals("..")) {
                throw new CheckpointException(where + " contains '..', expected a file name inside the model directory");
            }
        }
        Path resolved;
        try {
            Path relative = Path.of(shard);
            if (relative.isAbsolute()) {
                throw new CheckpointException(where + " is absolute, expected a file name inside the model directory");
            }
            resolved = dir.resolve(relative).normalize();
        } catch (InvalidPathException e) {
            throw new CheckpointException(where + " is not a valid path: " + e.getMessage());
        }
        if (!resolved.startsWith(dir.normalize())) {
            throw new CheckpointException(where + " escapes the model directory " + dir);
        }
    }

    /**
     * Writes an index for {@code weightMap} (tensor → shard file name) to {@code file}, with the
     * {@code metadata.total_size} Hugging Face writes.
     */
    public static void write(Path file, Map<String, String> weightMap, long totalSize) {
        ObjectNode root = StrictJson.mapper().createObjectNode();
        root.putObject("metadata").put("total_size", totalSize);
        ObjectNode map = root.putObject("weight_map");
        new TreeMap<>(weightMap).forEach(map::put);
        try {
            Files.writeString(file, StrictJson.mapper().writerWithDefaultPrettyPrinter().writeValueAsString(root));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write index " + file + ": " + e.getMessage(), e);
        }
    }

    /** The index file. */
    public Path file() {
        return file;
    }

    /** Tensor name → shard file name (relative to the model directory), sorted by tensor name. */
    public Map<String, String> weightMap() {
        return weightMap;
    }

    /** The distinct shard file names, in first-mention order of the sorted weight map. */
    public Set<String> shards() {
        return Collections.unmodifiableSet(new LinkedHashSet<>(weightMap.values()));
    }
}
