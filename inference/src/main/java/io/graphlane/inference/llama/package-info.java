/**
 * The Llama family (Llama, Mistral, Qwen2) over the backend-neutral neural ops
 * ({@link io.graphlane.core.nn.NeuralOps}), split into pipeline stages.
 *
 * <p>Owns: {@link io.graphlane.inference.llama.LlamaConfig} (the model's hyperparameters, kept apart
 * from the checkpoint module's parsed config.json so the math does not depend on file parsing),
 * {@link io.graphlane.inference.llama.StageWeights} and {@link io.graphlane.inference.llama.LayerWeights}
 * (one stage's tensors), {@link io.graphlane.inference.llama.LlamaStage} (one stage's forward pass
 * over a micro-batch of {@link io.graphlane.inference.llama.Segment}s, and the per-request
 * {@link io.graphlane.inference.llama.KvCache}s of that stage), and the Hugging Face tensor names
 * ({@link io.graphlane.inference.llama.LlamaTensors}).
 *
 * <p>Guarantees: Hugging Face semantics (F32 RMSNorm, rotate-half RoPE, grouped-query attention,
 * SwiGLU, tied or untied head, q/k/v and output biases where the checkpoint has them); a stage's
 * forward is ordinary lane work (one thread at a time, no blocking beyond its own ops); a failed
 * step advances no cache; once warmed, a step allocates only the tensor it hands on (its
 * intermediate values live in buffers the stage keeps, the KV caches grow by doubling). Refuses: a request's positions out of order or past the model's maximum,
 * a request twice in one step, inputs of the wrong kind for the stage (token ids only on stage 0).
 */
package io.graphlane.inference.llama;
