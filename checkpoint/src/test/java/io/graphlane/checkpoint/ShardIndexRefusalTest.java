package io.graphlane.checkpoint;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.graphlane.checkpoint.json.StrictJson;
import io.graphlane.checkpoint.safetensors.SafetensorsWriter;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.function.Consumer;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Every shard-index refusal of CHECKPOINTS.md, each with a corrupted copy of the sharded fixture. */
class ShardIndexRefusalTest {
    private static final String FIRST = "model-00001-of-00002.safetensors";
    private static final String SECOND = "model-00002-of-00002.safetensors";

    @TempDir
    Path tmp;

    private Path dir;

    private Path withIndex(Consumer<ObjectNode> edit) throws IOException {
        dir = Fixtures.copy("sharded", tmp);
        Path index = dir.resolve(ShardIndex.FILE_NAME);
        ObjectNode root = (ObjectNode) StrictJson.mapper().readTree(Files.readString(index));
        edit.accept(root);
        Files.writeString(index, StrictJson.mapper().writeValueAsString(root));
        return dir;
    }

    private Path withIndexText(String text) throws IOException {
        dir = Fixtures.copy("sharded", tmp);
        Files.writeString(dir.resolve(ShardIndex.FILE_NAME), text);
        return dir;
    }

    private static ObjectNode map(ObjectNode root) {
        return (ObjectNode) root.get("weight_map");
    }

    private void refused(Path model, String... fragments) {
        CheckpointException e = assertThrows(CheckpointException.class, () -> CheckpointCatalog.open(model));
        for (String f : fragments) {
            assertTrue(e.getMessage().contains(f), "expected '" + f + "' in: " + e.getMessage());
        }
    }

    @Test
    void missingWeightMap() throws IOException {
        refused(withIndex(r -> r.remove("weight_map")), ShardIndex.FILE_NAME, "has no field 'weight_map'");
    }

    @Test
    void emptyWeightMap() throws IOException {
        refused(withIndex(r -> r.putObject("weight_map")), ShardIndex.FILE_NAME, "'weight_map' is empty");
    }

    @Test
    void weightMapNotAnObjectOrIndexNotJson() throws IOException {
        refused(withIndex(r -> r.putArray("weight_map")), "'weight_map' is not an object");
        refused(withIndexText("{\"weight_map\": {\"a\": \"x\", \"a\": \"y\"}}"), "not valid JSON", "Duplicate field 'a'");
    }

    @Test
    void emptyTensorName() throws IOException {
        refused(withIndex(r -> map(r).put("", FIRST)), "empty tensor name");
    }

    @Test
    void absoluteShardPath() throws IOException {
        refused(withIndex(r -> map(r).put("lm_head.weight", "/etc/passwd")),
                "'weight_map.lm_head.weight'", "\"/etc/passwd\" is absolute");
    }

    @Test
    void dotDotShardPath() throws IOException {
        refused(withIndex(r -> map(r).put("lm_head.weight", "../sharded/" + FIRST)), "contains '..'");
        refused(withIndex(r -> map(r).put("lm_head.weight", "sub/../../x.safetensors")), "contains '..'");
    }

    @Test
    void shardEscapingThroughASymlink() throws IOException {
        Path outside = tmp.resolve("outside");
        Files.createDirectories(outside);
        new SafetensorsWriter().addF32("lm_head.weight", new long[] {1}, new float[] {1}).write(outside.resolve("evil.safetensors"));
        withIndex(r -> map(r).put("lm_head.weight", "link.safetensors"));
        try {
            Files.createSymbolicLink(dir.resolve("link.safetensors"), outside.resolve("evil.safetensors"));
        } catch (UnsupportedOperationException | IOException e) {
            Assumptions.abort("the filesystem refuses symbolic links: " + e);
        }
        refused(dir, "\"link.safetensors\" resolves to", "outside the model directory");
    }

    @Test
    void missingShard() throws IOException {
        withIndex(r -> { });
        Files.delete(dir.resolve(SECOND));
        refused(dir, "shard \"" + SECOND + "\"", "is missing");
    }

    @Test
    void tensorMappedToAShardThatDoesNotHoldIt() throws IOException {
        refused(withIndex(r -> map(r).put("model.norm.weight", FIRST)),
                "maps tensor 'model.norm.weight' to shard \"" + FIRST + "\", which does not hold it", "it is in \"" + SECOND);
        refused(withIndex(r -> map(r).put("model.ghost.weight", FIRST)), "maps tensor 'model.ghost.weight'", "does not hold it");
    }

    @Test
    void nameHeldByTwoShards() throws IOException {
        withIndex(r -> map(r).put("extra.weight", FIRST));
        // rewrite the second shard with one more tensor that the first shard also holds
        Path second = dir.resolve(SECOND);
        CheckpointCatalog original = CheckpointCatalog.open(Fixtures.tinyLlama("sharded"));
        SafetensorsWriter w = new SafetensorsWriter();
        try (CheckpointSource src = CheckpointSource.of(original, 2)) {
            for (TensorLocation t : original.tensors().values()) {
                if (t.shardName().equals(SECOND)) {
                    var lease = src.lease(t.name());
                    w.add(t.name(), t.spec(), lease.bytes());
                    lease.release();
                }
            }
            var head = src.lease("lm_head.weight");
            w.add("lm_head.weight", head.spec(), head.bytes());
            head.release();
        }
        w.write(second);
        refused(dir, "tensor 'lm_head.weight' is held by two shards", FIRST, SECOND);
    }

    @Test
    void shardHoldingATensorTheIndexDoesNotList() throws IOException {
        refused(withIndex(r -> map(r).remove("model.norm.weight")),
                "shard \"" + SECOND + "\" holds tensor 'model.norm.weight' which field 'weight_map' does not list");
    }

    @Test
    void bothLayoutsOrNoWeightsAtAll() throws IOException {
        withIndex(r -> { });
        Files.copy(Fixtures.tinyLlama("").resolve("model.safetensors"), dir.resolve("model.safetensors"));
        refused(dir, "holds both model.safetensors and model.safetensors.index.json");
        Path empty = Files.createDirectories(tmp.resolve("empty"));
        refused(empty, "no model.safetensors and no model.safetensors.index.json");
        refused(tmp.resolve("nowhere"), "not a directory");
    }

    @Test
    void corruptShardHeaderIsNamedByItsFile() throws IOException {
        withIndex(r -> { });
        byte[] b = Files.readAllBytes(dir.resolve(SECOND));
        b[8] = '[';
        Files.write(dir.resolve(SECOND), b);
        refused(dir, SECOND + ": ", "not valid JSON");
    }
}
