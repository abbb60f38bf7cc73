package io.graphlane.checkpoint.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.graphlane.checkpoint.json.StrictJson;
import io.graphlane.core.nn.GateActivation;
import io.graphlane.core.tensor.Shape;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;

/** Gemma 2 and Gemma 3 (text) configs read as transformers reads them: defaults, both RoPE layouts, tensors, refusals. */
class GemmaConfigTest {
    private static final Path FILE = Path.of("g", "config.json");

    /** A Gemma 2 config with the fields gemma-2-2b's config.json has (tiny sizes, no optional field set). */
    private static ObjectNode gemma2() {
        ObjectNode c = StrictJson.mapper().createObjectNode();
        c.putArray("architectures").add("Gemma2ForCausalLM");
        c.put("model_type", "gemma2").put("hidden_size", 64).put("intermediate_size", 128).put("num_hidden_layers", 4)
                .put("num_attention_heads", 4).put("num_key_value_heads", 2).put("vocab_size", 256)
                .put("max_position_embeddings", 8192).put("hidden_act", "gelu_pytorch_tanh")
                .put("hidden_activation", "gelu_pytorch_tanh").put("cache_implementation", "hybrid")
                .put("torch_dtype", "float32");
        return c;
    }

    /** A Gemma 3 text config as gemma-3-1b-it's (4.x layout). */
    private static ObjectNode gemma3() {
        ObjectNode c = gemma2();
        c.putArray("architectures").add("Gemma3ForCausalLM");
        c.remove("hidden_act");
        c.put("model_type", "gemma3_text").put("head_dim", 16).put("query_pre_attn_scalar", 16)
                .put("rope_local_base_freq", 10000.0).put("sliding_window", 512).put("sliding_window_pattern", 6)
                .putNull("attn_logit_softcapping").putNull("final_logit_softcapping");
        c.putObject("rope_scaling").put("rope_type", "linear").put("factor", 8.0);
        return c;
    }

    private static ModelConfig parse(ObjectNode c) {
        return ModelConfig.parse(FILE, c.toString());
    }

    private static ObjectNode edit(ObjectNode c, Consumer<ObjectNode> change) {
        change.accept(c);
        return c;
    }

    private static void refused(ObjectNode c, String... fragments) {
        ModelConfigException e = assertThrows(ModelConfigException.class, () -> parse(c));
        assertEquals(1, e.getMessage().lines().count(), e.getMessage());
        for (String f : fragments) {
            assertTrue(e.getMessage().contains(f), "expected '" + f + "' in: " + e.getMessage());
        }
    }

    @Test
    void gemma2TakesTransformersDefaults() {
        ModelConfig c = parse(gemma2());
        assertEquals(Architecture.GEMMA2, c.architecture());
        GemmaConfig g = c.gemma().orElseThrow();
        assertEquals(256, c.headDim(), "Gemma2Config's head_dim default, not hidden / heads");
        assertEquals(256.0, g.queryPreAttnScalar());
        assertEquals(50.0, g.attnLogitSoftcapping());
        assertEquals(30.0, g.finalLogitSoftcapping());
        assertTrue(c.tieWordEmbeddings(), "Gemma ties the head unless told otherwise");
        assertEquals(GateActivation.GELU_TANH, c.hiddenAct());
        assertEquals(10_000.0, c.rope().theta());
        assertEquals(c.rope(), g.slidingRope(), "Gemma 2 has one rotary embedding");
        assertEquals(8f, g.embeddingScale());
    }

    @Test
    void gemmaReadsHiddenActivationAndIgnoresHiddenAct() {
        ModelConfig c = parse(edit(gemma2(), o -> o.put("hidden_act", "silu").put("hidden_activation", "gelu")));
        assertEquals(GateActivation.GELU, c.hiddenAct());
        refused(edit(gemma2(), o -> o.put("hidden_activation", "relu")), "field 'hidden_activation'", "relu");
    }

    @Test
    void nullSoftCapsMeanNone() {
        GemmaConfig g = parse(edit(gemma2(), o -> o.putNull("attn_logit_softcapping").putNull("final_logit_softcapping")))
                .gemma().orElseThrow();
        assertEquals(0.0, g.attnLogitSoftcapping());
        assertEquals(0.0, g.finalLogitSoftcapping());
        refused(edit(gemma2(), o -> o.put("attn_logit_softcapping", -1.0)), "field 'attn_logit_softcapping'");
    }

    @Test
    void theEmbeddingScaleIsSqrtHiddenInTheModelDtype() {
        // gemma-3-4b: hidden 2560, sqrt = 50.596..., 50.5 in bfloat16; gemma-3-12b: 3840 -> 62.0; gemma-2-2b: 2304 -> 48 exactly
        assertEquals(50.5f, GemmaConfig.embeddingScale(2560, Optional.of("bfloat16")));
        assertEquals(62.0f, GemmaConfig.embeddingScale(3840, Optional.of("bfloat16")));
        assertEquals(48.0f, GemmaConfig.embeddingScale(2304, Optional.of("bfloat16")));
        assertEquals(50.59375f, GemmaConfig.embeddingScale(2560, Optional.of("float16")));
        assertEquals((float) Math.sqrt(2560), GemmaConfig.embeddingScale(2560, Optional.of("float32")));
        assertEquals((float) Math.sqrt(2560), GemmaConfig.embeddingScale(2560, Optional.empty()));
    }

    @Test
    void gemma3HasALocalRopeForSlidingLayersAndTheScaledGlobalOne() {
        ModelConfig c = parse(gemma3());
        assertEquals(Architecture.GEMMA3_TEXT, c.architecture());
        assertTrue(c.architecture().hasQkNorm());
        GemmaConfig g = c.gemma().orElseThrow();
        assertEquals(RopeConfig.Type.LINEAR, c.rope().type());
        assertEquals(8.0, c.rope().factor());
        assertEquals(1_000_000.0, c.rope().theta(), "rope_theta absent: Gemma3TextConfig's default");
        assertEquals(RopeConfig.Type.DEFAULT, g.slidingRope().type());
        assertEquals(10_000.0, g.slidingRope().theta());
        assertEquals(0.0, g.attnLogitSoftcapping());
        assertEquals(1 / 4.0, g.attentionScale());
    }

    @Test
    void gemma3DefaultsItsGlobalBaseToAMillion() {
        ObjectNode c = gemma3();
        c.remove("rope_scaling");
        c.remove("rope_local_base_freq");
        ModelConfig m = parse(c);
        assertEquals(1_000_000.0, m.rope().theta());
        assertEquals(10_000.0, m.gemma().orElseThrow().slidingRope().theta());
        assertEquals(0.0, parse(edit(gemma3(), o -> o.remove("attn_logit_softcapping"))).gemma().orElseThrow().attnLogitSoftcapping(),
                "Gemma 3 has no attention soft cap by default");
    }

    @Test
    void gemma3ReadsThe5xPerLayerTypeLayout() {
        ObjectNode c = gemma3();
        c.remove("rope_scaling");
        c.remove("rope_local_base_freq");
        ObjectNode p = c.putObject("rope_parameters");
        p.putObject("full_attention").put("rope_type", "linear").put("factor", 8.0).put("rope_theta", 1_000_000.0);
        p.putObject("sliding_attention").put("rope_type", "default").put("rope_theta", 10_000.0);
        ModelConfig m = parse(c);
        assertEquals(RopeConfig.Type.LINEAR, m.rope().type());
        assertEquals(1_000_000.0, m.rope().theta());
        assertEquals(10_000.0, m.gemma().orElseThrow().slidingRope().theta());
        ((ObjectNode) p.get("sliding_attention")).remove("rope_theta");
        assertEquals(10_000.0, parse(c).gemma().orElseThrow().slidingRope().theta(), "Gemma3TextConfig's sliding default");
        c.put("rope_local_base_freq", 20_000.0);
        refused(c, "field 'rope_local_base_freq'", "contradict");
        c.remove("rope_local_base_freq");
        p.putObject("chunked_attention").put("rope_type", "default");
        refused(c, "field 'rope_parameters.chunked_attention'");
    }

    @Test
    void gemmaTensorsIncludeTheFourNormsAndGemma3sHeadNorms() {
        Map<String, Shape> two = ModelTensors.layerTensors(parse(gemma2()), 0);
        assertTrue(two.containsKey("model.layers.0.pre_feedforward_layernorm.weight"));
        assertTrue(two.containsKey("model.layers.0.post_feedforward_layernorm.weight"));
        assertTrue(two.containsKey("model.layers.0.post_attention_layernorm.weight"));
        assertFalse(two.containsKey("model.layers.0.self_attn.q_norm.weight"));
        Map<String, Shape> three = ModelTensors.layerTensors(parse(gemma3()), 1);
        assertEquals(Shape.of(16), three.get("model.layers.1.self_attn.q_norm.weight"));
        assertEquals(Shape.of(16), three.get("model.layers.1.self_attn.k_norm.weight"));
        assertFalse(ModelTensors.expected(parse(gemma2())).containsKey(ModelTensors.LM_HEAD), "tied by default");
    }

    @Test
    void gemmaConfigsGraphlaneCannotRunAreRefusedNamingTheField() {
        refused(edit(gemma3(), o -> o.put("use_bidirectional_attention", true)), "field 'use_bidirectional_attention'");
        refused(edit(gemma3(), o -> o.put("model_type", "gemma3")), "field 'model_type'", "gemma3_text");
        refused(edit(gemma2(), o -> o.put("rope_local_base_freq", 10000.0)), "field 'rope_local_base_freq'");
        refused(edit(gemma2(), o -> o.put("mlp_bias", true)), "field 'mlp_bias'");
    }

    @Test
    void gemmaFieldsOnAnotherArchitectureAreRefused() {
        ObjectNode llama = gemma2();
        llama.putArray("architectures").add("LlamaForCausalLM");
        llama.put("model_type", "llama");
        llama.remove("hidden_activation");
        llama.remove("cache_implementation");
        llama.put("query_pre_attn_scalar", 256);
        refused(llama, "field 'query_pre_attn_scalar'", "LlamaForCausalLM");
        llama.remove("query_pre_attn_scalar");
        llama.put("cache_implementation", "hybrid");
        refused(llama, "field 'cache_implementation'", "LlamaForCausalLM");
        // Gemma 2's sliding_window_size, which transformers never reads, is accepted there
        assertEquals(Architecture.GEMMA2, parse(edit(gemma2(), o -> o.put("sliding_window_size", 4096))).architecture());
    }
}
