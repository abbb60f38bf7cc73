/**
 * Stage weights: {@link io.graphlane.inference.weights.StageWeightsLoader} is what the model asks
 * for, {@link io.graphlane.inference.weights.StageWeightsAssembly} checks and assembles one stage's
 * tensors all or nothing, and {@link io.graphlane.inference.weights.CheckpointWeightsLoader} reads
 * them from checkpoint leases (F16/BF16 widened by the checkpoint module's cast) until the
 * materialization supervisor takes over. Guarantees: every lease released once, after its bytes
 * were copied; a failed stage releases what it made and names the tensor. Refuses missing tensors,
 * wrong shapes and non-float dtypes.
 */
package io.graphlane.inference.weights;
