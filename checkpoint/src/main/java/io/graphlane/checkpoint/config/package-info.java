/**
 * Hugging Face model configuration for the Llama family ({@code LlamaForCausalLM},
 * {@code MistralForCausalLM}, {@code Qwen2ForCausalLM}): {@link io.graphlane.checkpoint.config.ModelConfig}
 * validates config.json (positive sizes, heads dividing the hidden size, kv heads dividing the
 * heads, a supported architecture) and {@link io.graphlane.checkpoint.config.ModelTensors} lists
 * the tensors an architecture needs and checks a checkpoint against them, naming each missing
 * tensor and each wrong shape with the expected and the found shape. Refuses any other architecture,
 * naming the supported ones.
 */
package io.graphlane.checkpoint.config;
