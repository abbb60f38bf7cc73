/**
 * Stage weights: {@link io.graphlane.inference.weights.StageWeightsLoader} is what the model asks
 * for, and {@link io.graphlane.inference.weights.StageWeightsAssembly} arranges one stage's tensors
 * (named and shaped as {@link io.graphlane.inference.llama.LlamaTensors} says) all or nothing.
 *
 * <p>{@link io.graphlane.inference.weights.SupervisedWeightsLoader}, the path of the pipeline, hands
 * each stage to the {@link io.graphlane.actors.materialize.MaterializationSupervisor} as one atomic
 * unit of checkpoint leases and derived-weight recipes, each tensor as its
 * {@link io.graphlane.inference.weights.WeightPlan} says under the loader's
 * {@link io.graphlane.inference.weights.WeightFormat}, realized on a loading lane of the pipeline's backend
 * (on the CPU aligned F32 and F16/BF16 read in place, casts and 8-bit blocks evaluated; on a GPU uploaded,
 * F16/BF16 widened); the bound weights are wrapped as backend
 * tensors without a copy ({@link io.graphlane.inference.weights.WeightSlots}) and owned by that
 * loader until its {@code release} or {@code close}. {@link io.graphlane.inference.weights.SupervisedUnits} is
 * that hand-off of one unit and the wait for its answer, shared with the tensor-parallel shards' loader.
 * {@link io.graphlane.inference.weights.CheckpointWeightsLoader} copies leased bytes into tensors on
 * the calling thread (the sequential path, with no actor system); those tensors belong to the caller
 * ({@code StageWeightsAssembly.release}); {@link io.graphlane.inference.weights.CpuFormatWeightsLoader} does the same
 * for CPU tensors in any format (a node's stages).
 *
 * <p>Guarantees: every lease is released exactly once, after the bytes it lends were realized; a
 * failed stage binds nothing, keeps no lease and names every tensor at fault with expected and found
 * values; each bound weight is closed exactly once. Refuses missing tensors (before leasing any),
 * wrong shapes and non-float dtypes.
 */
package io.graphlane.inference.weights;
