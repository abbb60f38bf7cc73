package io.graphlane.checkpoint.gguf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.graphlane.core.tensor.Shape;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** The metadata → config.json mapping and the tensor name mapping, as pure functions over built metadata. */
class GgufConfigTest {
    private static final Path FILE = Path.of("m.gguf");

    private final Map<String, GgufValue> values = new LinkedHashMap<>();
    private final Map<String, GgufTensorInfo> tensors = new LinkedHashMap<>();

    private GgufConfigTest put(String key, Object v) {
        GgufValue value;
        if (v instanceof String s) {
            value = GgufValue.scalar(GgufValueType.STRING, s);
        } else if (v instanceof Double d) {
            value = GgufValue.scalar(GgufValueType.FLOAT32, d);
        } else {
            value = GgufValue.scalar(GgufValueType.UINT32, ((Number) v).longValue());
        }
        values.put(key, value);
        return this;
    }

    private void model(String arch, int hidden, int heads, int kv, int vocab) {
        put("general.architecture", arch);
        put(arch + ".embedding_length", hidden);
        put(arch + ".block_count", 2);
        put(arch + ".feed_forward_length", 4 * hidden);
        put(arch + ".attention.head_count", heads);
        put(arch + ".attention.head_count_kv", kv);
        put(arch + ".context_length", 4096);
        put(arch + ".attention.layer_norm_rms_epsilon", 1e-6);
        put(arch + ".rope.freq_base", 1_000_000.0);
        tensors.put("token_embd.weight", new GgufTensorInfo("token_embd.weight", GgmlType.F32,
                new long[] {hidden, vocab}, 0, 4L * hidden * vocab));
    }

    private ObjectNode config() {
        return config(Map.of());
    }

    private ObjectNode config(Map<String, float[]> rope) {
        return GgufConfig.toHfConfig(new GgufMetadata(FILE, values), tensors, rope);
    }

    private void output(int hidden, int vocab) {
        tensors.put("output.weight", new GgufTensorInfo("output.weight", GgmlType.Q8_0, new long[] {hidden, vocab}, 0,
                GgmlType.Q8_0.rowBytes(hidden) * vocab));
    }

    @Test
    void mixtureOfExpertsFilesAreRefusedNamingTheKey() {
        model("llama", 512, 8, 4, 256);
        put("llama.expert_count", 8);
        GgufFormatException e = assertThrows(GgufFormatException.class, this::config);
        assertTrue(e.getMessage().contains("'llama.expert_count' is 8: a mixture of experts"), e.getMessage());
        values.clear();
        model("qwen3moe", 512, 8, 4, 256);
        e = assertThrows(GgufFormatException.class, this::config);
        assertTrue(e.getMessage().contains("'general.architecture' is \"qwen3moe\": a mixture of experts"), e.getMessage());
    }

    @Test
    void qwen2() {
        model("qwen2", 896, 14, 2, 151936);
        put("tokenizer.ggml.bos_token_id", 151643);
        put("tokenizer.ggml.eos_token_id", 151645);
        put("tokenizer.ggml.eot_token_id", 151645);
        ObjectNode c = config();
        assertEquals("Qwen2ForCausalLM", c.get("architectures").get(0).asText());
        assertEquals("qwen2", c.get("model_type").asText());
        assertEquals(896, c.get("hidden_size").asInt());
        assertEquals(3584, c.get("intermediate_size").asInt());
        assertEquals(2, c.get("num_hidden_layers").asInt());
        assertEquals(14, c.get("num_attention_heads").asInt());
        assertEquals(2, c.get("num_key_value_heads").asInt());
        assertEquals(151936, c.get("vocab_size").asInt());
        assertEquals(4096, c.get("max_position_embeddings").asInt());
        assertEquals(1e-6, c.get("rms_norm_eps").asDouble(), 1e-12);
        assertEquals(1e6, c.get("rope_theta").asDouble());
        assertTrue(c.get("tie_word_embeddings").asBoolean(), "no output.weight: tied");
        assertEquals(151645, c.get("eos_token_id").asInt(), "EOT equal to EOS is listed once");
        assertEquals(151643, c.get("bos_token_id").asInt());
        assertFalse(c.has("head_dim"));
        assertFalse(c.has("rope_scaling"));
    }

    @Test
    void llamaWithLlama3RopeFactorsAndSeveralEndIds() {
        model("llama", 2048, 32, 8, 128256);
        put("llama.rope.freq_base", 500000.0);
        put("llama.rope.dimension_count", 64);
        put("tokenizer.ggml.eos_token_id", 128009);
        put("tokenizer.ggml.eot_token_id", 128001);
        put("tokenizer.ggml.eom_token_id", 128008);
        output(2048, 128256);
        double[] factors = GgufConfig.llama3Factors(500000, 64, 32, 1, 4, 8192);
        float[] stored = new float[factors.length];
        for (int i = 0; i < stored.length; i++) {
            stored[i] = (float) factors[i];
        }
        ObjectNode c = config(Map.of(GgufConfig.ROPE_FREQS, stored));
        assertEquals("LlamaForCausalLM", c.get("architectures").get(0).asText());
        assertFalse(c.get("tie_word_embeddings").asBoolean());
        ObjectNode s = (ObjectNode) c.get("rope_scaling");
        assertEquals("llama3", s.get("rope_type").asText());
        assertEquals(32.0, s.get("factor").asDouble(), 1e-6);
        assertEquals(1.0, s.get("low_freq_factor").asDouble());
        assertEquals(4.0, s.get("high_freq_factor").asDouble());
        assertEquals(8192, s.get("original_max_position_embeddings").asInt());
        assertEquals("[128009,128001,128008]", c.get("eos_token_id").toString());
        assertEquals(1.0, factors[0], "the highest frequencies are not scaled");
        assertEquals(32.0, factors[31], "the lowest are scaled by the factor");

        assertTrue(factors[15] > 1 && factors[15] < 32, "factor 15 lies in the smoothed band: " + factors[15]);
        stored[15] *= 1.5f;
        GgufFormatException e = assertThrows(GgufFormatException.class, () -> config(Map.of(GgufConfig.ROPE_FREQS, stored)));
        assertTrue(e.getMessage().contains("tensor 'rope_freqs.weight' factor 15 is"), e.getMessage());
    }

    @Test
    void qwen3AndGemma2CarryTheirHeadDimAndSoftCaps() {
        model("qwen3", 1024, 16, 8, 151936);
        put("qwen3.attention.key_length", 128);
        ObjectNode q = config();
        assertEquals("Qwen3ForCausalLM", q.get("architectures").get(0).asText());
        assertEquals(128, q.get("head_dim").asInt());

        values.clear();
        tensors.clear();
        model("gemma2", 2304, 8, 4, 256000);
        put("gemma2.attention.key_length", 256);
        put("gemma2.attn_logit_softcapping", 50.0);
        put("gemma2.final_logit_softcapping", 30.0);
        put("gemma2.attention.sliding_window", 4096);
        ObjectNode g = config();
        assertEquals("Gemma2ForCausalLM", g.get("architectures").get(0).asText());
        assertEquals(256, g.get("head_dim").asInt());
        assertEquals(50.0, g.get("attn_logit_softcapping").asDouble());
        assertEquals(30.0, g.get("final_logit_softcapping").asDouble());
        assertEquals(4096, g.get("sliding_window").asInt());
        assertEquals(256, g.get("query_pre_attn_scalar").asInt());
        assertEquals("gelu_pytorch_tanh", g.get("hidden_activation").asText());
    }

    @Test
    void phi3WithPartialRotaryAndLinearOrYarnScaling() {
        model("phi3", 3072, 32, 32, 32064);
        put("phi3.rope.dimension_count", 48);
        put("phi3.rope.scaling.type", "linear");
        put("phi3.rope.scaling.factor", 2.0);
        ObjectNode c = config();
        assertEquals("Phi3ForCausalLM", c.get("architectures").get(0).asText());
        assertEquals(0.5, c.get("partial_rotary_factor").asDouble());
        assertEquals("linear", c.get("rope_scaling").get("type").asText());
        assertEquals(2.0, c.get("rope_scaling").get("factor").asDouble());

        put("phi3.rope.scaling.type", "yarn");
        put("phi3.rope.scaling.original_context_length", 1024);
        ObjectNode y = config();
        assertEquals("yarn", y.get("rope_scaling").get("rope_type").asText());
        assertEquals(1024, y.get("rope_scaling").get("original_max_position_embeddings").asInt());
    }

    @Test
    void refusals() {
        model("mamba", 64, 4, 4, 256);
        GgufFormatException e = assertThrows(GgufFormatException.class, this::config);
        assertEquals("m.gguf: metadata 'general.architecture' is \"mamba\", expected one of llama, qwen2, qwen3, gemma2, phi3",
                e.getMessage());
        values.clear();
        model("llama", 64, 4, 3, 256);
        e = assertThrows(GgufFormatException.class, this::config);
        assertEquals("m.gguf: metadata 'llama.attention.head_count_kv' 3 does not divide 'llama.attention.head_count' 4",
                e.getMessage());
        values.remove("llama.attention.head_count_kv");
        values.remove("llama.block_count");
        e = assertThrows(GgufFormatException.class, this::config);
        assertEquals("m.gguf: metadata 'llama.block_count' is missing (num_hidden_layers)", e.getMessage());
        put("llama.block_count", 0);
        e = assertThrows(GgufFormatException.class, this::config);
        assertEquals("m.gguf: metadata 'llama.block_count' is 0, expected 1 to 2147483647", e.getMessage());
        put("llama.block_count", 2);
        put("llama.vocab_size", 300);
        e = assertThrows(GgufFormatException.class, this::config);
        assertEquals("m.gguf: metadata 'llama.vocab_size' is 300 but tensor 'token_embd.weight' has 256 rows", e.getMessage());
        values.remove("llama.vocab_size");
        put("llama.rope.scaling.type", "longrope");
        e = assertThrows(GgufFormatException.class, this::config);
        assertEquals("m.gguf: metadata 'llama.rope.scaling.type' is \"longrope\", expected none, linear or yarn", e.getMessage());
    }

    @Test
    void tensorNamesMapBothWays() {
        assertEquals(Optional.of(new GgufTensorNames.Mapped("model.layers.3.self_attn.q_proj.weight",
                GgufTensorNames.Transform.UNPERMUTE_Q)), GgufTensorNames.toHf("llama", "blk.3.attn_q.weight"));
        assertEquals(Optional.of(new GgufTensorNames.Mapped("model.layers.0.self_attn.k_proj.bias",
                GgufTensorNames.Transform.NONE)), GgufTensorNames.toHf("qwen2", "blk.0.attn_k.bias"));
        assertEquals("model.layers.1.self_attn.q_norm.weight", GgufTensorNames.toHf("qwen3", "blk.1.attn_q_norm.weight")
                .orElseThrow().hfName());
        assertEquals("model.layers.1.pre_feedforward_layernorm.weight", GgufTensorNames.toHf("gemma2",
                "blk.1.ffn_norm.weight").orElseThrow().hfName());
        assertEquals(GgufTensorNames.Transform.MINUS_ONE, GgufTensorNames.toHf("gemma2", "blk.1.post_ffw_norm.weight")
                .orElseThrow().transform());
        assertEquals("model.layers.2.self_attn.qkv_proj.weight", GgufTensorNames.toHf("phi3", "blk.2.attn_qkv.weight")
                .orElseThrow().hfName());
        assertEquals("model.layers.2.mlp.gate_up_proj.weight", GgufTensorNames.toHf("phi3", "blk.2.ffn_up.weight")
                .orElseThrow().hfName());
        assertEquals("lm_head.weight", GgufTensorNames.toHf("llama", "output.weight").orElseThrow().hfName());
        assertEquals("model.embed_tokens.weight", GgufTensorNames.toHf("llama", "token_embd.weight").orElseThrow().hfName());
        assertEquals("model.norm.weight", GgufTensorNames.toHf("llama", "output_norm.weight").orElseThrow().hfName());
        assertEquals(Optional.empty(), GgufTensorNames.toHf("llama", "rope_freqs.weight"));
        assertEquals(Optional.empty(), GgufTensorNames.toHf("llama", "blk.0.attn_qkv.weight"));
        for (String arch : new String[] {"llama", "qwen2", "qwen3", "gemma2", "phi3"}) {
            for (String part : new String[] {"attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "attn_qkv",
                    "attn_q_norm", "attn_k_norm", "ffn_norm", "post_attention_norm", "post_ffw_norm", "ffn_gate", "ffn_up",
                    "ffn_down"}) {
                String name = "blk.7." + part + ".weight";
                GgufTensorNames.toHf(arch, name).ifPresent(m ->
                        assertEquals(Optional.of(name), GgufTensorNames.fromHf(arch, m.hfName()), arch + " " + name));
            }
        }
    }

    @Test
    void tensorShapesAreNeReversed() {
        GgufTensorInfo t = new GgufTensorInfo("x", GgmlType.Q4_K, new long[] {512, 3, 2}, 0, 2 * 144 * 3 * 2);
        assertEquals(Shape.of(2, 3, 512), t.shape());
        assertEquals(Shape.of(2, 3, 288), t.storedSpec().shape());
    }
}
