package io.graphlane.inference.model;

import com.fasterxml.jackson.databind.JsonNode;
import io.graphlane.checkpoint.config.Architecture;
import io.graphlane.core.GraphlaneException;
import io.graphlane.core.nn.NeuralOps;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * The attention window of every decoder layer, read from config.json as Hugging Face transformers applies it
 * (modeling_mistral.py, modeling_qwen2.py and configuration_qwen2.py of transformers 4.53 and later, whose masks come from
 * masking_utils.py): a sliding layer's query at position {@code i} attends to the keys {@code j} with
 * {@code i - j < sliding_window}; every other layer attends to all earlier positions ({@link NeuralOps#NO_WINDOW}).
 * <ul>
 *   <li>Mistral: every layer slides when {@code sliding_window} is a number; {@code null} is full attention; absent is
 *       MistralConfig's default of 4096. Mistral reads no {@code use_sliding_window}.</li>
 *   <li>Qwen2: the window is {@code sliding_window} (absent: 4096) only when {@code use_sliding_window} is true (absent:
 *       false). The sliding layers are those {@code layer_types} marks {@code "sliding_attention"}, or without
 *       {@code layer_types} the layers {@code i >= max_window_layers} (absent: 28).</li>
 *   <li>Qwen3: as Qwen2 (Qwen3Config reads the same three fields).</li>
 *   <li>Phi-3: every layer slides when {@code sliding_window} is a number; absent or {@code null} is full attention.</li>
 *   <li>Gemma 2 and Gemma 3: the layers {@code layer_types} marks {@code "sliding_attention"} attend within
 *       {@code sliding_window} (absent: 4096); without {@code layer_types}, every layer {@code i} with
 *       {@code (i + 1) % pattern != 0} slides, the pattern being 2 for Gemma 2 and Gemma 3's {@code sliding_window_pattern}
 *       (or {@code _sliding_window_pattern}; absent: 6).</li>
 *   <li>Mixtral: as Phi-3 (MixtralConfig's {@code sliding_window} defaults to None).</li>
 *   <li>Qwen3-MoE: full attention; {@code use_sliding_window} true is refused.</li>
 *   <li>Llama: transformers' Llama applies no window; a {@code sliding_window} there changes nothing.</li>
 * </ul>
 */
final class AttentionWindows {
    /** MistralConfig's and Qwen2Config's default {@code sliding_window}. */
    static final int DEFAULT_SLIDING_WINDOW = 4096;
    /** Qwen2Config's default {@code max_window_layers}. */
    static final int DEFAULT_MAX_WINDOW_LAYERS = 28;

    private AttentionWindows() {
    }

    /**
     * One window per layer of a model of {@code layers} layers of {@code architecture}, from config.json's fields in
     * {@code raw}.
     *
     * @throws GraphlaneException naming {@code file} and the field at fault, with the value expected and found
     */
    static List<Integer> of(Path file, Architecture architecture, int layers, JsonNode raw) {
        List<Integer> none = Collections.nCopies(layers, NeuralOps.NO_WINDOW);
        return switch (architecture) {
            case LLAMA -> none;
            case MISTRAL -> {
                int window = window(file, raw, DEFAULT_SLIDING_WINDOW);
                yield Collections.nCopies(layers, window);
            }
            case QWEN2, QWEN3 -> qwen2(file, layers, raw);
            case MIXTRAL -> {
                // MixtralConfig's sliding_window defaults to None; a number applies to every layer, as Mistral's does
                int window = window(file, raw, NeuralOps.NO_WINDOW);
                yield Collections.nCopies(layers, window);
            }
            case QWEN3_MOE -> {
                JsonNode use = raw.get("use_sliding_window");
                if (use != null && !use.isNull() && !(use.isBoolean() && !use.booleanValue())) {
                    throw new GraphlaneException(file + ": field 'use_sliding_window' is " + use
                            + ": graphlane runs Qwen3MoeForCausalLM with full attention only (false or absent)");
                }
                yield none;
            }
            case GEMMA2, GEMMA3_TEXT -> gemma(file, architecture, layers, raw);
            case PHI3 -> {
                // Phi3Config's sliding_window defaults to None; a number applies to every layer
                int window = window(file, raw, NeuralOps.NO_WINDOW);
                yield Collections.nCopies(layers, window);
            }
        };
    }

    private static List<Integer> qwen2(Path file, int layers, JsonNode raw) {
        JsonNode use = raw.get("use_sliding_window");
        if (use != null && !use.isNull() && !use.isBoolean()) {
            throw new GraphlaneException(file + ": field 'use_sliding_window' is " + use + ", expected true or false");
        }
        boolean used = use != null && use.asBoolean(false);
        int window = used ? window(file, raw, DEFAULT_SLIDING_WINDOW) : NeuralOps.NO_WINDOW;
        JsonNode types = raw.get("layer_types");
        List<Integer> windows = new ArrayList<>(layers);
        if (types != null && !types.isNull()) {
            if (!types.isArray() || types.size() != layers) {
                throw new GraphlaneException(file + ": field 'layer_types' is " + abbreviated(types) + ", expected a list of "
                        + layers + " entries (num_hidden_layers), each \"full_attention\" or \"sliding_attention\"");
            }
            for (int l = 0; l < layers; l++) {
                String type = types.get(l).asText("");
                switch (types.get(l).isTextual() ? type : "") {
                    case "full_attention" -> windows.add(NeuralOps.NO_WINDOW);
                    case "sliding_attention" -> {
                        if (window == NeuralOps.NO_WINDOW) {
                            // transformers refuses this too: its sliding mask needs config.sliding_window, which
                            // Qwen2Config sets to None unless use_sliding_window is true
                            throw new GraphlaneException(file + ": field 'layer_types' marks layer " + l
                                    + " \"sliding_attention\" but no window applies (use_sliding_window is " + use
                                    + ", sliding_window is " + raw.get("sliding_window") + ")");
                        }
                        windows.add(window);
                    }
                    default -> throw new GraphlaneException(file + ": field 'layer_types' entry " + l + " is " + types.get(l)
                            + ", expected \"full_attention\" or \"sliding_attention\"");
                }
            }
            return windows;
        }
        int from = DEFAULT_MAX_WINDOW_LAYERS;
        JsonNode maxWindowLayers = raw.get("max_window_layers");
        if (maxWindowLayers != null && !maxWindowLayers.isNull()) {
            if (!maxWindowLayers.isInt() || maxWindowLayers.intValue() < 0) {
                throw new GraphlaneException(file + ": field 'max_window_layers' is " + maxWindowLayers + ", expected a non-negative integer");
            }
            from = maxWindowLayers.intValue();
        }
        for (int l = 0; l < layers; l++) {
            windows.add(l >= from ? window : NeuralOps.NO_WINDOW);
        }
        return windows;
    }

    private static List<Integer> gemma(Path file, Architecture architecture, int layers, JsonNode raw) {
        int window = window(file, raw, DEFAULT_SLIDING_WINDOW);
        List<Boolean> sliding = new ArrayList<>(layers);
        JsonNode types = raw.get("layer_types");
        if (types != null && !types.isNull()) {
            if (!types.isArray() || types.size() != layers) {
                throw new GraphlaneException(file + ": field 'layer_types' is " + abbreviated(types) + ", expected a list of "
                        + layers + " entries (num_hidden_layers), each \"full_attention\" or \"sliding_attention\"");
            }
            for (int l = 0; l < layers; l++) {
                switch (types.get(l).isTextual() ? types.get(l).textValue() : "") {
                    case "full_attention" -> sliding.add(false);
                    case "sliding_attention" -> sliding.add(true);
                    default -> throw new GraphlaneException(file + ": field 'layer_types' entry " + l + " is " + types.get(l)
                            + ", expected \"full_attention\" or \"sliding_attention\"");
                }
            }
        } else {
            int pattern = architecture == Architecture.GEMMA2 ? 2 : slidingPattern(file, raw);
            for (int l = 0; l < layers; l++) {
                sliding.add((l + 1) % pattern != 0);
            }
        }
        List<Integer> windows = new ArrayList<>(layers);
        for (int l = 0; l < layers; l++) {
            if (sliding.get(l) && window == NeuralOps.NO_WINDOW) {
                throw new GraphlaneException(file + ": layer " + l + " is a sliding-window layer of " + architecture.hfName()
                        + " but field 'sliding_window' is null; expected a positive integer");
            }
            windows.add(sliding.get(l) ? window : NeuralOps.NO_WINDOW);
        }
        return windows;
    }

    /** Gemma 3's {@code sliding_window_pattern} (the 4.x name, or the {@code _sliding_window_pattern} it saves), default 6. */
    private static int slidingPattern(Path file, JsonNode raw) {
        Integer found = null;
        for (String field : List.of("sliding_window_pattern", "_sliding_window_pattern")) {
            JsonNode node = raw.get(field);
            if (node == null || node.isNull()) {
                continue;
            }
            if (!node.isInt() || node.intValue() <= 0) {
                throw new GraphlaneException(file + ": field '" + field + "' is " + node + ", expected a positive integer");
            }
            if (found != null && found != node.intValue()) {
                throw new GraphlaneException(file + ": field '" + field + "' is " + node + " but 'sliding_window_pattern' is " + found
                        + "; a config must not contradict itself");
            }
            found = node.intValue();
        }
        return found == null ? 6 : found;
    }

    /** {@code sliding_window}: a positive integer, {@code null} for none, {@code absent} when the field is missing. */
    private static int window(Path file, JsonNode raw, int absent) {
        JsonNode node = raw.get("sliding_window");
        if (node == null) {
            return absent;
        }
        if (node.isNull()) {
            return NeuralOps.NO_WINDOW;
        }
        if (!node.isInt() || node.intValue() <= 0) {
            throw new GraphlaneException(file + ": field 'sliding_window' is " + node + ", expected a positive integer or null");
        }
        return node.intValue();
    }

    private static String abbreviated(JsonNode node) {
        String text = node.toString();
        return text.length() <= 80 ? text : text.substring(0, 77) + "...";
    }
}
