package io.graphlane.checkpoint.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.graphlane.checkpoint.json.StrictJson;
import java.nio.file.Path;
import java.util.List;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;

/** Mixtral's and Qwen3-MoE's config.json: every mixture-of-experts field applied with transformers' defaults, or refused. */
class MoeConfigTest {
    private static final Path FILE = Path.of("m", "config.json");

    private static ObjectNode base(String arch, String type) {
        ObjectNode c = StrictJson.mapper().createObjectNode();
        c.putArray("architectures").add(arch);
        c.put("model_type", type).put("hidden_size", 64).put("intermediate_size", 32).put("num_hidden_layers", 4)
                .put("num_attention_heads", 4).put("num_key_value_heads", 2).put("vocab_size", 256)
                .put("max_position_embeddings", 128).put("rms_norm_eps", 1e-5).put("rope_theta", 1e6);
        return c;
    }

    private static ObjectNode mixtral(Consumer<ObjectNode> change) {
        ObjectNode c = base("MixtralForCausalLM", "mixtral");
        c.put("num_local_experts", 8).put("num_experts_per_tok", 2).put("router_aux_loss_coef", 0.02)
                .put("output_router_logits", false).put("router_jitter_noise", 0.0);
        change.accept(c);
        return c;
    }

    private static ObjectNode qwen(Consumer<ObjectNode> change) {
        ObjectNode c = base("Qwen3MoeForCausalLM", "qwen3_moe");
        c.put("head_dim", 32).put("num_experts", 16).put("num_experts_per_tok", 4).put("moe_intermediate_size", 24)
                .put("norm_topk_prob", true).put("decoder_sparse_step", 2).put("use_sliding_window", false);
        c.putArray("mlp_only_layers").add(3);
        change.accept(c);
        return c;
    }

    private static void refused(ObjectNode c, String... fragments) {
        ModelConfigException e = assertThrows(ModelConfigException.class, () -> ModelConfig.parse(FILE, c.toString()));
        for (String f : fragments) {
            assertTrue(e.getMessage().contains(f), "expected '" + f + "' in: " + e.getMessage());
        }
    }

    @Test
    void mixtralReadsItsExpertsAndAlwaysRenormalises() {
        ModelConfig c = ModelConfig.parse(FILE, mixtral(o -> { }).toString());
        assertEquals(Architecture.MIXTRAL, c.architecture());
        MoeConfig m = c.moe().orElseThrow();
        assertEquals(8, m.expertCount());
        assertEquals(2, m.expertsPerToken());
        assertEquals(32, m.expertIntermediateSize(), "Mixtral's experts are intermediate_size wide");
        assertTrue(m.renormalize());
        assertEquals(List.of(true, true, true, true), m.sparseLayers());
        assertEquals("model.layers.1.block_sparse_moe.experts.7.w3.weight", m.upName(1, 7));
        assertTrue(ModelTensors.expected(c).containsKey("model.layers.3.block_sparse_moe.gate.weight"));
        assertFalse(ModelTensors.expected(c).containsKey("model.layers.0.mlp.gate_proj.weight"));
        // MixtralConfig's defaults
        MoeConfig defaults = ModelConfig.parse(FILE, mixtral(o -> {
            o.remove("num_local_experts");
            o.remove("num_experts_per_tok");
        }).toString()).moe().orElseThrow();
        assertEquals(8, defaults.expertCount());
        assertEquals(2, defaults.expertsPerToken());
    }

    @Test
    void qwen3MoeAppliesDecoderSparseStepMlpOnlyLayersAndNormTopkProb() {
        ModelConfig c = ModelConfig.parse(FILE, qwen(o -> { }).toString());
        MoeConfig m = c.moe().orElseThrow();
        // (i + 1) % 2 == 0 for layers 1 and 3; 3 is in mlp_only_layers
        assertEquals(List.of(false, true, false, false), m.sparseLayers());
        assertEquals(24, m.expertIntermediateSize());
        assertTrue(m.renormalize());
        assertTrue(c.architecture().hasQkNorm());
        assertTrue(ModelTensors.expected(c).containsKey("model.layers.1.mlp.experts.15.down_proj.weight"));
        assertTrue(ModelTensors.expected(c).containsKey("model.layers.0.mlp.gate_proj.weight"), "dense layers keep the MLP");
        MoeConfig defaults = ModelConfig.parse(FILE, qwen(o -> {
            o.remove("norm_topk_prob");
            o.remove("decoder_sparse_step");
            o.remove("mlp_only_layers");
        }).toString()).moe().orElseThrow();
        assertFalse(defaults.renormalize(), "Qwen3MoeConfig's norm_topk_prob defaults to false");
        assertEquals(List.of(true, true, true, true), defaults.sparseLayers());
    }

    @Test
    void badExpertFieldsAreRefusedNamingTheField() {
        refused(mixtral(o -> o.put("num_experts_per_tok", 9)), "field 'num_experts_per_tok' is 9, more than the 8 experts");
        refused(mixtral(o -> o.put("num_experts", 8)), "field 'num_experts' is Qwen3-MoE's");
        refused(mixtral(o -> o.put("num_local_experts", 0)), "field 'num_local_experts' is 0");
        refused(qwen(o -> o.putArray("mlp_only_layers").add(4)), "field 'mlp_only_layers' holds 4", "from 0 to 3");
        refused(qwen(o -> o.put("norm_topk_prob", "yes")), "field 'norm_topk_prob'", "expected true or false");
        refused(qwen(o -> o.put("num_local_experts", 8)), "field 'num_local_experts' is Mixtral's");
        ObjectNode dense = base("LlamaForCausalLM", "llama");
        dense.put("num_experts", 8);
        refused(dense, "field 'num_experts'", "not one graphlane knows for LlamaForCausalLM");
        ObjectNode qwen2Moe = base("Qwen2MoeForCausalLM", "qwen2_moe");
        refused(qwen2Moe, "Qwen2MoeForCausalLM", "shared expert");
    }
}
