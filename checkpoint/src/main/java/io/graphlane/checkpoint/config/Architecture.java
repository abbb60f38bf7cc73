package io.graphlane.checkpoint.config;

import java.util.Arrays;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Collectors;

/** The decoder-only architectures graphlane loads, named as Hugging Face names them. */
public enum Architecture {
    /** Llama 1–3 (optional attention biases when {@code attention_bias} is true, MLP biases when {@code mlp_bias} is). */
    LLAMA("LlamaForCausalLM", "llama"),
    /** Mistral: Llama's tensors, no biases. */
    MISTRAL("MistralForCausalLM", "mistral"),
    /** Qwen2: Llama's tensors plus q/k/v projection biases. */
    QWEN2("Qwen2ForCausalLM", "qwen2"),
    /** Qwen3: Llama's tensors plus a per-head RMSNorm of the queries and keys before RoPE, and an explicit head width. */
    QWEN3("Qwen3ForCausalLM", "qwen3"),
    /** Phi-3 and Phi-4-mini: fused {@code qkv_proj} and {@code gate_up_proj}, split at load. */
    PHI3("Phi3ForCausalLM", "phi3"),
    /**
     * Gemma 2: (1 + w) RMSNorms, embeddings scaled by sqrt(hidden), GeGLU, norms before and after attention and the MLP,
     * {@code query_pre_attn_scalar}, attention and final-logit soft-capping, alternating sliding-window layers.
     */
    GEMMA2("Gemma2ForCausalLM", "gemma2"),
    /**
     * Gemma 3's text decoder: Gemma 2's layer plus (1 + w) q/k norms before RoPE, a local RoPE base for the sliding
     * layers, no soft-capping by default.
     */
    GEMMA3_TEXT("Gemma3ForCausalLM", "gemma3_text"),
    /** Mixtral: Mistral's attention, a sparse mixture of experts ({@code block_sparse_moe}) in place of every MLP. */
    MIXTRAL("MixtralForCausalLM", "mixtral"),
    /**
     * Qwen3-MoE: Qwen3's attention (q/k norms), a sparse mixture of experts ({@code mlp.experts}) in the layers
     * {@code decoder_sparse_step} and {@code mlp_only_layers} leave sparse, dense MLPs in the others.
     */
    QWEN3_MOE("Qwen3MoeForCausalLM", "qwen3_moe");

    /** Architectures people meet that graphlane refuses, with the reason. */
    private static final Map<String, String> REFUSED = Map.ofEntries(
            Map.entry("Gemma3ForConditionalGeneration", "a vision-language model (its text decoder alone, saved as "
                    + "Gemma3ForCausalLM with model_type gemma3_text, is supported)"),
            Map.entry("GemmaForCausalLM", "Gemma needs (1 + w) RMSNorms and embedding scaling"),
            Map.entry("Phi3SmallForCausalLM", "Phi-3-small uses block-sparse attention and gegelu"),
            Map.entry("PhiForCausalLM", "Phi-1/2 use LayerNorm, a parallel attention/MLP block and no gate"),
            Map.entry("Qwen2MoeForCausalLM", "a mixture of experts with a shared expert and its gate"),
            Map.entry("Qwen2VLForConditionalGeneration", "a vision-language model with multimodal RoPE"),
            Map.entry("Qwen2_5_VLForConditionalGeneration", "a vision-language model with multimodal RoPE"));

    private final String hfName;
    private final String modelType;

    Architecture(String hfName, String modelType) {
        this.hfName = hfName;
        this.modelType = modelType;
    }

    /** The name in config.json's {@code architectures}. */
    public String hfName() {
        return hfName;
    }

    /** The name in config.json's {@code model_type}. */
    public String modelType() {
        return modelType;
    }

    /** True if the q, k and v projections always carry biases. */
    public boolean hasQkvBias() {
        return this == QWEN2;
    }

    /** True if queries and keys pass a per-head RMSNorm before RoPE ({@code q_norm}, {@code k_norm}). */
    public boolean hasQkNorm() {
        return this == QWEN3 || this == GEMMA3_TEXT || this == QWEN3_MOE;
    }

    /** True for Gemma 2 and Gemma 3 (text): the layer of {@link GemmaConfig}. */
    public boolean isGemma() {
        return this == GEMMA2 || this == GEMMA3_TEXT;
    }

    /** True for the mixture-of-experts architectures (Mixtral, Qwen3-MoE): the layer of {@link MoeConfig}. */
    public boolean isMoe() {
        return this == MIXTRAL || this == QWEN3_MOE;
    }

    /** True if the checkpoint fuses q/k/v into {@code qkv_proj} and gate/up into {@code gate_up_proj}. */
    public boolean fusesProjections() {
        return this == PHI3;
    }

    /** The architecture with this {@code architectures} name, or empty. */
    public static Optional<Architecture> fromHfName(String name) {
        return Arrays.stream(values()).filter(a -> a.hfName.equals(name)).findFirst();
    }

    /** The architecture with this {@code model_type}, or empty. */
    public static Optional<Architecture> fromModelType(String type) {
        return Arrays.stream(values()).filter(a -> a.modelType.equals(type)).findFirst();
    }

    /** Why graphlane refuses the architecture {@code name}, for architectures people commonly try; else empty. */
    public static Optional<String> refusalReason(String name) {
        return Optional.ofNullable(REFUSED.get(name));
    }

    /** The architectures refused with a stated reason, by name. */
    public static Map<String, String> refused() {
        return REFUSED;
    }

    /** The supported {@code architectures} names, for error messages. */
    public static String supportedNames() {
        return Arrays.stream(values()).map(Architecture::hfName).collect(Collectors.joining(", "));
    }
}
