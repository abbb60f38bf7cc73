package io.graphlane.inference.model;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import static io.graphlane.core.nn.NeuralOps.NO_WINDOW;

import io.graphlane.core.GraphlaneException;
import io.graphlane.inference.llama.LlamaConfig;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Opening model directories: what config.json fields become, and what is refused with a named field. */
class ModelDirectoryTest {

    @Test
    void theFixtureOpensWithItsConfiguration() {
        ModelDirectory model = ModelDirectory.open(Fixture.dir("sharded"));
        assertEquals(64, model.config().hiddenSize());
        assertEquals(2, model.config().kvHeadCount());
        assertEquals(16, model.config().headDim());
        assertEquals(Set.of(), model.eosTokenIds());
        assertEquals("sharded", model.name());
    }

    @Test
    void eosIdsAreReadAsOneIdOrAList(@TempDir Path tmp) throws IOException {
        assertEquals(Set.of(7), ModelDirectory.open(withConfig(tmp.resolve("one"), "\"eos_token_id\": null", "\"eos_token_id\": 7")).eosTokenIds());
        assertEquals(Set.of(1, 2), ModelDirectory.open(withConfig(tmp.resolve("two"), "\"eos_token_id\": null", "\"eos_token_id\": [1, 2]")).eosTokenIds());
    }

    @Test
    void generationConfigEosIdsTakePrecedenceOverConfigJson(@TempDir Path tmp) throws IOException {
        Path list = withConfig(tmp.resolve("list"), "\"eos_token_id\": null", "\"eos_token_id\": 7");
        Files.writeString(list.resolve(ModelDirectory.GENERATION_CONFIG), "{\"eos_token_id\": [3, 5]}");
        assertEquals(Set.of(3, 5), ModelDirectory.open(list).eosTokenIds());
        Path without = withConfig(tmp.resolve("without"), "\"eos_token_id\": null", "\"eos_token_id\": 7");
        Files.writeString(without.resolve(ModelDirectory.GENERATION_CONFIG), "{\"bos_token_id\": 1}");
        assertEquals(Set.of(7), ModelDirectory.open(without).eosTokenIds());
        Path bad = withConfig(tmp.resolve("bad"), "\"eos_token_id\": null", "\"eos_token_id\": 7");
        Files.writeString(bad.resolve(ModelDirectory.GENERATION_CONFIG), "{\"eos_token_id\": \"</s>\"}");
        GraphlaneException e = assertThrows(GraphlaneException.class, () -> ModelDirectory.open(bad));
        assertTrue(e.getMessage().contains("generation_config.json: field 'eos_token_id'"), e.getMessage());
    }

    @Test
    void llama3RopeScalingIsAppliedAndAnIncompleteOneRefusedNamingTheField(@TempDir Path tmp) throws IOException {
        Path dir = withConfig(tmp.resolve("incomplete"), "\"eos_token_id\": null",
                "\"eos_token_id\": null, \"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8.0}");
        GraphlaneException e = assertThrows(GraphlaneException.class, () -> ModelDirectory.open(dir));
        assertTrue(e.getMessage().contains("config.json: field 'rope_scaling.original_max_position_embeddings' is missing"), e.getMessage());
        ModelDirectory llama3 = ModelDirectory.open(withConfig(tmp.resolve("llama3"), "\"eos_token_id\": null",
                "\"eos_token_id\": null, \"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8.0, \"low_freq_factor\": 1.0, "
                        + "\"high_freq_factor\": 4.0, \"original_max_position_embeddings\": 64}"));
        assertEquals(io.graphlane.checkpoint.config.RopeConfig.Type.LLAMA3, llama3.config().rope().type());
    }

    @Test
    void mistralsSlidingWindowAppliesToEveryLayerAndNoLongerCapsTheSequence(@TempDir Path tmp) throws IOException {
        LlamaConfig on = ModelDirectory.open(mistral(tmp.resolve("on"), "\"sliding_window\": 32")).config();
        assertEquals(256, on.maxPositions(), "max_position_embeddings, not the window");
        assertEquals(List.of(32, 32, 32, 32), on.attentionWindows());
        LlamaConfig off = ModelDirectory.open(mistral(tmp.resolve("off"), "\"sliding_window\": null")).config();
        assertEquals(List.of(NO_WINDOW, NO_WINDOW, NO_WINDOW, NO_WINDOW), off.attentionWindows());
        // Mistral reads no use_sliding_window; a config without sliding_window gets MistralConfig's 4096
        assertEquals(List.of(32, 32, 32, 32), ModelDirectory.open(mistral(tmp.resolve("unused"),
                "\"sliding_window\": 32, \"use_sliding_window\": false")).config().attentionWindows());
        assertEquals(List.of(4096, 4096, 4096, 4096), ModelDirectory.open(mistral(tmp.resolve("absent"), ""))
                .config().attentionWindows());
    }

    @Test
    void aLlamaConfigsSlidingWindowChangesNothing(@TempDir Path tmp) throws IOException {
        LlamaConfig c = ModelDirectory.open(withConfig(tmp, "\"eos_token_id\": null",
                "\"eos_token_id\": null, \"sliding_window\": 32")).config();
        assertEquals(256, c.maxPositions());
        assertEquals(List.of(NO_WINDOW, NO_WINDOW, NO_WINDOW, NO_WINDOW), c.attentionWindows());
    }

    @Test
    void aBadSlidingWindowIsRefusedNamingTheFileAndField(@TempDir Path tmp) throws IOException {
        for (String bad : List.of("0", "-4", "\"32\"", "1.5")) {
            Path dir = mistral(tmp.resolve("w" + bad.hashCode()), "\"sliding_window\": " + bad);
            GraphlaneException e = assertThrows(GraphlaneException.class, () -> ModelDirectory.open(dir));
            assertTrue(e.getMessage().contains("config.json: field 'sliding_window' is " + bad)
                    && e.getMessage().contains("expected a positive integer or null"), e.getMessage());
        }
    }

    @Test
    void aMissingDirectoryIsNamed(@TempDir Path tmp) {
        GraphlaneException e = assertThrows(GraphlaneException.class, () -> ModelDirectory.open(tmp.resolve("nowhere")));
        assertTrue(e.getMessage().contains("nowhere") && e.getMessage().contains("--model"), e.getMessage());
    }

    /** The F32 fixture as a Mistral model (the same tensors) with {@code fields} added to its config.json. */
    private static Path mistral(Path dir, String fields) throws IOException {
        withConfig(dir, "\"eos_token_id\": null", fields.isEmpty() ? "\"eos_token_id\": null" : "\"eos_token_id\": null, " + fields);
        Path config = dir.resolve("config.json");
        String text = Files.readString(config);
        Files.writeString(config, text.replace("\"llama\"", "\"mistral\"").replace("LlamaForCausalLM", "MistralForCausalLM"));
        return dir;
    }

    /** A copy of the F32 fixture whose config.json has {@code from} replaced by {@code to}. */
    private static Path withConfig(Path dir, String from, String to) throws IOException {
        Files.createDirectories(dir);
        try (Stream<Path> files = Files.list(Fixture.dir(""))) {
            for (Path f : files.filter(Files::isRegularFile).toList()) {
                Files.copy(f, dir.resolve(f.getFileName()));
            }
        }
        String config = Files.readString(dir.resolve("config.json"));
        assertTrue(config.contains(from), "fixture config holds " + from);
        Files.writeString(dir.resolve("config.json"), config.replace(from, to));
        return dir;
    }
}
