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

/** Which Gemma layers slide: layer_types when present, else every layer but each pattern-th (2 for Gemma 2, 6 by default for Gemma 3). */
class GemmaAttentionWindowsTest {
    private static final Path FILE = Path.of("g", "config.json");

    private static List<Integer> windows(Architecture arch, int layers, String json) {
        try {
            JsonNode raw = new ObjectMapper().readTree(json);
            return AttentionWindows.of(FILE, arch, layers, raw);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    @Test
    void gemma2AlternatesSlidingAndFullLayersFromTheFirst() {
        assertEquals(List.of(16, NO_WINDOW, 16, NO_WINDOW, 16), windows(Architecture.GEMMA2, 5, "{\"sliding_window\": 16}"));
        assertEquals(List.of(4096, NO_WINDOW), windows(Architecture.GEMMA2, 2, "{}"), "Gemma2Config's default window");
    }

    @Test
    void gemma3SlidesFiveLayersInSixByDefaultOrByItsPattern() {
        List<Integer> six = windows(Architecture.GEMMA3_TEXT, 12, "{\"sliding_window\": 512}");
        for (int l = 0; l < 12; l++) {
            assertEquals((l + 1) % 6 == 0 ? NO_WINDOW : 512, six.get(l), "layer " + l);
        }
        assertEquals(List.of(8, NO_WINDOW, 8, NO_WINDOW),
                windows(Architecture.GEMMA3_TEXT, 4, "{\"sliding_window\": 8, \"sliding_window_pattern\": 2}"));
        assertEquals(List.of(8, 8, NO_WINDOW),
                windows(Architecture.GEMMA3_TEXT, 3, "{\"sliding_window\": 8, \"_sliding_window_pattern\": 3}"));
    }

    @Test
    void layerTypesWinOverThePattern() {
        assertEquals(List.of(NO_WINDOW, 8, 8), windows(Architecture.GEMMA3_TEXT, 3, "{\"sliding_window\": 8, \"sliding_window_pattern\": 2,"
                + " \"layer_types\": [\"full_attention\", \"sliding_attention\", \"sliding_attention\"]}"));
    }

    @Test
    void contradictionsAndSlidingLayersWithoutAWindowAreRefused() {
        GraphlaneException e = assertThrows(GraphlaneException.class, () -> windows(Architecture.GEMMA2, 2, "{\"sliding_window\": null}"));
        assertTrue(e.getMessage().startsWith(FILE + ": layer 0") && e.getMessage().contains("'sliding_window' is null"), e.getMessage());
        e = assertThrows(GraphlaneException.class, () -> windows(Architecture.GEMMA3_TEXT, 4,
                "{\"sliding_window\": 8, \"sliding_window_pattern\": 2, \"_sliding_window_pattern\": 3}"));
        assertTrue(e.getMessage().contains("'_sliding_window_pattern'") && e.getMessage().contains("contradict"), e.getMessage());
        e = assertThrows(GraphlaneException.class, () -> windows(Architecture.GEMMA3_TEXT, 2,
                "{\"sliding_window\": 8, \"layer_types\": [\"full_attention\", \"chunked_attention\"]}"));
        assertTrue(e.getMessage().contains("'layer_types' entry 1"), e.getMessage());
    }
}
