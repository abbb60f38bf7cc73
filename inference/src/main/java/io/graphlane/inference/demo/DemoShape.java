package io.graphlane.inference.demo;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.graphlane.core.GraphlaneException;
import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;

/**
 * The shapes {@code graphlane demo-model --shape} writes random weights of: the built-in demo model and the published
 * configurations of real models (their {@code config.json} fields as Hugging Face ships them: widths, heads, vocabulary,
 * tied embeddings, Qwen2's q/k/v biases, RoPE base and Llama 3's {@code rope_scaling}). Only the weights are random.
 */
public enum DemoShape {
    /** The built-in demo model ({@link DemoModel#CONFIG}): 8 layers of width 768, a 256-token byte vocabulary. */
    DEMO("demo"),
    /** meta-llama/Llama-3.2-1B: 16 layers of width 2048, vocabulary 128256, tied embeddings, llama3 RoPE scaling. */
    LLAMA_3_2_1B("llama-3.2-1b"),
    /** Qwen/Qwen2.5-0.5B: 24 layers of width 896, vocabulary 151936, tied embeddings, q/k/v biases. */
    QWEN2_5_0_5B("qwen2.5-0.5b"),
    /** meta-llama/Llama-3.1-8B: 32 layers of width 4096, vocabulary 128256, a separate head, llama3 RoPE scaling. */
    LLAMA_3_1_8B("llama-3.1-8b");

    private final String cliName;

    DemoShape(String cliName) {
        this.cliName = cliName;
    }

    /** The name {@code --shape} takes. */
    public String cliName() {
        return cliName;
    }

    /**
     * The shape named {@code name} (as {@code --shape} takes it, case-insensitive).
     *
     * @throws GraphlaneException naming the value and listing the shapes
     */
    public static DemoShape of(String name) {
        for (DemoShape s : values()) {
            if (s.cliName.equalsIgnoreCase(name.trim())) {
                return s;
            }
        }
        throw new GraphlaneException("--shape: unknown shape '" + name + "', expected one of " + names());
    }

    /** The names {@code --shape} takes, comma-separated. */
    public static String names() {
        return Arrays.stream(values()).map(DemoShape::cliName).collect(Collectors.joining(", "));
    }

    /**
     * The {@code config.json} of this shape with weights of {@code torchDtype} ("bfloat16" or "float32"), as the published
     * model's (fields that change no forward pass, such as {@code transformers_version}, left out).
     */
    public ObjectNode config(String torchDtype) {
        ObjectNode c = new ObjectMapper().createObjectNode();
        switch (this) {
            case DEMO -> {
                return (ObjectNode) readTree(DemoModel.configJson(DemoModel.CONFIG, torchDtype));
            }
            case LLAMA_3_2_1B -> llama(c, 2048, 8192, 16, true, 32);
            case LLAMA_3_1_8B -> llama(c, 4096, 14336, 32, false, 8);
            case QWEN2_5_0_5B -> {
                c.putArray("architectures").add("Qwen2ForCausalLM");
                c.put("model_type", "qwen2");
                c.put("hidden_act", "silu");
                c.put("hidden_size", 896);
                c.put("intermediate_size", 4864);
                c.put("num_hidden_layers", 24);
                c.put("num_attention_heads", 14);
                c.put("num_key_value_heads", 2);
                c.put("vocab_size", 151936);
                c.put("max_position_embeddings", 32768);
                c.put("rms_norm_eps", 1e-6);
                c.put("rope_theta", 1000000.0);
                c.put("sliding_window", 32768);
                c.put("use_sliding_window", false);
                c.put("max_window_layers", 24);
                c.put("tie_word_embeddings", true);
                c.put("attention_dropout", 0.0);
                c.put("initializer_range", 0.02);
                c.put("use_cache", true);
                c.put("bos_token_id", 151643);
                c.put("eos_token_id", 151643);
            }
            default -> throw new IllegalStateException(name());
        }
        c.put("torch_dtype", torchDtype);
        return c;
    }

    private static void llama(ObjectNode c, int hidden, int intermediate, int layers, boolean tied, double ropeFactor) {
        c.putArray("architectures").add("LlamaForCausalLM");
        c.put("model_type", "llama");
        c.put("hidden_act", "silu");
        c.put("hidden_size", hidden);
        c.put("intermediate_size", intermediate);
        c.put("num_hidden_layers", layers);
        c.put("num_attention_heads", 32);
        c.put("num_key_value_heads", 8);
        c.put("head_dim", hidden / 32);
        c.put("vocab_size", 128256);
        c.put("max_position_embeddings", 131072);
        c.put("rms_norm_eps", 1e-5);
        c.put("rope_theta", 500000.0);
        ObjectNode scaling = c.putObject("rope_scaling");
        scaling.put("factor", ropeFactor);
        scaling.put("high_freq_factor", 4.0);
        scaling.put("low_freq_factor", 1.0);
        scaling.put("original_max_position_embeddings", 8192);
        scaling.put("rope_type", "llama3");
        c.put("tie_word_embeddings", tied);
        c.put("attention_bias", false);
        c.put("attention_dropout", 0.0);
        c.put("mlp_bias", false);
        c.put("initializer_range", 0.02);
        c.put("pretraining_tp", 1);
        c.put("use_cache", true);
        c.put("bos_token_id", 128000);
        c.put("eos_token_id", 128001);
    }

    private static com.fasterxml.jackson.databind.JsonNode readTree(String json) {
        try {
            return new ObjectMapper().readTree(json);
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new IllegalStateException("the demo config does not parse", e);
        }
    }

    @Override
    public String toString() {
        return cliName.toLowerCase(Locale.ROOT);
    }
}
