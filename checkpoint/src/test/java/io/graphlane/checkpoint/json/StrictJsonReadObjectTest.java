package io.graphlane.checkpoint.json;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.checkpoint.CheckpointException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A model directory's small JSON files are read within a size limit, strictly, as one object, or refused naming the file. */
class StrictJsonReadObjectTest {
    @TempDir
    Path dir;

    @Test
    void readsAnObject() throws Exception {
        Path file = Files.writeString(dir.resolve("generation_config.json"), "{\"temperature\": 0.6, \"top_k\": 20}");
        assertEquals(20, StrictJson.readObject(file, 100).get("top_k").asInt());
    }

    @Test
    void refusesWhatIsNotOneBoundedObject() throws Exception {
        Path file = dir.resolve("tokenizer_config.json");
        Files.writeString(file, "{\"a\": 1}" + " ".repeat(100));
        assertRefused(file, 50, file + ": 108 bytes, over the limit of 50");
        Files.writeString(file, "[1, 2]");
        assertRefused(file, 100, file + ": expected a JSON object, found array");
        Files.writeString(file, "{\"a\": 1, \"a\": 2}");
        assertRefused(file, 100, file + ": not valid JSON: Duplicate field 'a'");
        Files.writeString(file, "{\"a\": 1} {\"b\": 2}");
        assertRefused(file, 100, file + ": not valid JSON: ");
        Files.write(file, new byte[] {'{', '"', (byte) 0xff, '"', ':', '1', '}'});
        assertRefused(file, 100, file + ": not valid UTF-8");
        assertRefused(dir.resolve("missing.json"), 100, dir.resolve("missing.json") + ": cannot read: ");
    }

    private static void assertRefused(Path file, long limit, String start) {
        CheckpointException e = assertThrows(CheckpointException.class, () -> StrictJson.readObject(file, limit));
        assertTrue(e.getMessage().startsWith(start), e.getMessage());
        assertEquals(1, e.getMessage().lines().count(), e.getMessage());
    }
}
