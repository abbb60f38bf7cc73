package io.graphlane.inference.sampling;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.core.GraphlaneException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.OptionalDouble;
import java.util.OptionalInt;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** generation_config.json's sampling defaults: read where set, absent where not, refused out of range. */
class GenerationDefaultsTest {
    @TempDir
    Path dir;

    private GenerationDefaults read(String json) throws Exception {
        Files.writeString(dir.resolve(GenerationDefaults.FILE_NAME), json);
        return GenerationDefaults.read(dir);
    }

    @Test
    void readsTheFieldsTheFileSets() throws Exception {
        GenerationDefaults d = read("{\"bos_token_id\": 1, \"eos_token_id\": [2, 3], \"do_sample\": true, \"temperature\": 0.6,"
                + " \"top_p\": 0.9, \"top_k\": 20, \"min_p\": 0.05, \"repetition_penalty\": 1.1}");
        assertEquals(OptionalDouble.of(0.6), d.temperature());
        assertEquals(OptionalDouble.of(0.9), d.topP());
        assertEquals(OptionalInt.of(20), d.topK());
        assertEquals(OptionalDouble.of(0.05), d.minP());
        assertEquals(OptionalDouble.of(1.1), d.repetitionPenalty());
        assertEquals("temperature 0.6, top_p 0.9, top_k 20, min_p 0.05, repetition_penalty 1.1", d.describe());
    }

    @Test
    void fieldsLeftOutOrNullAreAbsent() throws Exception {
        GenerationDefaults d = read("{\"eos_token_id\": 2, \"temperature\": null, \"top_p\": 0.95}");
        assertTrue(d.temperature().isEmpty());
        assertEquals(OptionalDouble.of(0.95), d.topP());
        assertTrue(d.topK().isEmpty());
        assertEquals("top_p 0.95", d.describe());
    }

    @Test
    void noFileMeansNoDefaults() {
        assertEquals(GenerationDefaults.NONE, GenerationDefaults.read(dir));
        assertEquals("none", GenerationDefaults.NONE.describe());
    }

    @Test
    void anOutOfRangeValueIsRefusedNamingFileFieldExpectedAndFound() throws Exception {
        String m = assertThrows(GraphlaneException.class, () -> read("{\"top_p\": 1.5}")).getMessage();
        assertTrue(m.contains("generation_config.json") && m.contains("'top_p'") && m.contains("(0, 1]") && m.contains("1.5"), m);
        m = assertThrows(GraphlaneException.class, () -> read("{\"top_k\": -3}")).getMessage();
        assertTrue(m.contains("'top_k'") && m.contains("-3"), m);
        m = assertThrows(GraphlaneException.class, () -> read("{\"top_k\": 2.5}")).getMessage();
        assertTrue(m.contains("'top_k'") && m.contains("integer") && m.contains("2.5"), m);
        m = assertThrows(GraphlaneException.class, () -> read("{\"temperature\": \"hot\"}")).getMessage();
        assertTrue(m.contains("'temperature'") && m.contains("number") && m.contains("hot"), m);
        m = assertThrows(GraphlaneException.class, () -> read("{\"repetition_penalty\": 0}")).getMessage();
        assertTrue(m.contains("'repetition_penalty'") && m.contains("> 0"), m);
        m = assertThrows(GraphlaneException.class, () -> read("{\"min_p\": 2}")).getMessage();
        assertTrue(m.contains("'min_p'") && m.contains("[0, 1]"), m);
    }
}
