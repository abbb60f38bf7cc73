package io.graphlane.checkpoint.config;

import java.util.Arrays;
import java.util.Optional;
import java.util.stream.Collectors;

/** The decoder-only architectures graphlane loads: the Llama family, named as Hugging Face names them. */
public enum Architecture {
    /** Llama 1–3 (optional attention biases when {@code attention_bias} is true). */
    LLAMA("LlamaForCausalLM", "llama"),
    /** Mistral: Llama's tensors, no biases. */
    MISTRAL("MistralForCausalLM", "mistral"),
    /** Qwen2: Llama's tensors plus q/k/v projection biases. */
    QWEN2("Qwen2ForCausalLM", "qwen2");

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

    /** The architecture with this {@code architectures} name, or empty. */
    public static Optional<Architecture> fromHfName(String name) {
        return Arrays.stream(values()).filter(a -> a.hfName.equals(name)).findFirst();
    }

    /** The architecture with this {@code model_type}, or empty. */
    public static Optional<Architecture> fromModelType(String type) {
        return Arrays.stream(values()).filter(a -> a.modelType.equals(type)).findFirst();
    }

    /** The supported {@code architectures} names, for error messages. */
    public static String supportedNames() {
        return Arrays.stream(values()).map(Architecture::hfName).collect(Collectors.joining(", "));
    }
}
