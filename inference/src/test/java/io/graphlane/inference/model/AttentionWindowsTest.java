package io.graphlane.inference.model;

import static io.graphlane.core.nn.NeuralOps.NO_WINDOW;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.graphlane.checkpoint.config.Architecture;
import io.graphlane.core.GraphlaneException;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Which layers slide, and by how much, as transformers' Mistral and Qwen2 configurations decide it. */
class AttentionWindowsTest {
    private static final Path FILE = Path.of("m", "config.json");

    @Test
    void qwen2SlidesOnlyWithUseSlidingWindowFromMaxWindowLayersOn() {
        assertEquals(List.of(NO_WINDOW, NO_WINDOW, 16, 16), qwen2(4, "{\"use_sliding_window\": true, \"sliding_window\": 16, \"max_window_layers\": 2}"));
        assertEquals(List.of(16, 16, 16), qwen2(3, "{\"use_sliding_window\": true, \"sliding_window\": 16, \"max_window_layers\": 0}"));
        assertEquals(List.of(NO_WINDOW, NO_WINDOW), qwen2(2, "{\"use_sliding_window\": false, \"sliding_window\": 16, \"max_window_layers\": 0}"));
        // defaults: use_sliding_window false; with it true, sliding_window 4096 and max_window_layers 28
        assertEquals(List.of(NO_WINDOW, NO_WINDOW), qwen2(2, "{\"sliding_window\": 16, \"max_window_layers\": 0}"));
        List<Integer> defaults = qwen2(30, "{\"use_sliding_window\": true}");
        assertEquals(NO_WINDOW, defaults.get(27));
        assertEquals(4096, defaults.get(28));
        assertEquals(4096, defaults.get(29));
        // null sliding_window with use_sliding_window: no window (Qwen2Config keeps None)
        assertEquals(List.of(NO_WINDOW, NO_WINDOW), qwen2(2, "{\"use_sliding_window\": true, \"sliding_window\": null, \"max_window_layers\": 0}"));
    }

    @Test
    void qwen2LayerTypesNameTheSlidingLayersWhenPresent() {
        assertEquals(List.of(8, NO_WINDOW, 8), qwen2(3, "{\"use_sliding_window\": true, \"sliding_window\": 8, \"max_window_layers\": 3,"
                + " \"layer_types\": [\"sliding_attention\", \"full_attention\", \"sliding_attention\"]}"));
        assertEquals(List.of(NO_WINDOW, NO_WINDOW), qwen2(2, "{\"use_sliding_window\": false, \"sliding_window\": 8,"
                + " \"layer_types\": [\"full_attention\", \"full_attention\"]}"));
    }

    @Test
    void qwen2RefusesInconsistentOrMalformedFieldsNamingThem() {
        assertRefused("layer_types", 3, "{\"use_sliding_window\": true, \"sliding_window\": 8, \"layer_types\": [\"full_attention\"]}",
                "expected a list of 3 entries");
        assertRefused("layer_types", 2, "{\"use_sliding_window\": true, \"sliding_window\": 8,"
                + " \"layer_types\": [\"full_attention\", \"chunked_attention\"]}", "entry 1 is \"chunked_attention\"");
        assertRefused("layer_types", 2, "{\"use_sliding_window\": false, \"sliding_window\": 8,"
                + " \"layer_types\": [\"full_attention\", \"sliding_attention\"]}", "marks layer 1 \"sliding_attention\" but no window applies");
        assertRefused("max_window_layers", 2, "{\"use_sliding_window\": true, \"sliding_window\": 8, \"max_window_layers\": -1}",
                "expected a non-negative integer");
        assertRefused("use_sliding_window", 2, "{\"use_sliding_window\": \"yes\"}", "expected true or false");
        assertRefused("sliding_window", 2, "{\"use_sliding_window\": true, \"sliding_window\": 0}", "expected a positive integer or null");
    }

    @Test
    void llamaNeverSlides() {
        assertEquals(List.of(NO_WINDOW, NO_WINDOW), AttentionWindows.of(FILE, Architecture.LLAMA, 2,
                json("{\"use_sliding_window\": true, \"sliding_window\": 8}")));
    }

    private static List<Integer> qwen2(int layers, String config) {
        return AttentionWindows.of(FILE, Architecture.QWEN2, layers, json(config));
    }

    private static void assertRefused(String field, int layers, String config, String expected) {
        GraphlaneException e = assertThrows(GraphlaneException.class, () -> qwen2(layers, config));
        assertTrue(e.getMessage().startsWith(FILE + ": field '" + field + "'") && e.getMessage().contains(expected), e.getMessage());
    }

    private static JsonNode json(String text) {
        try {
            return new ObjectMapper().readTree(text);
        } catch (java.io.IOException e) {
            throw new IllegalStateException(e);
        }
    }
}
