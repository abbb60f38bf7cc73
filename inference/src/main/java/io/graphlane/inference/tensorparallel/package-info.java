/**
 * Tensor parallelism for the Llama family inside one JVM: each pipeline stage's layers split over
 * T shard lanes (Megatron-style). Rank r holds its query and key/value heads (rows of q/k/v and
 * their biases), its intermediate columns of the MLP (rows of gate/up), and the matching input
 * slices of the row-parallel projections (columns of o and down, in the Hugging Face layout where
 * a weight row is an output feature); norms and the output bias are replicated; the embedding and
 * the head live on rank 0 only. Every shard is a checkpoint recipe whose range is pushed down to
 * the lease ({@link io.graphlane.checkpoint.recipe.DerivedWeight#shard}): a rank never maps what it
 * does not own.
 *
 * <p>How it plugs into the pipeline (the simplest correct design): the pipeline engine and the lane
 * actors are unchanged and still see one lane per stage. A stage's step, submitted by its lane
 * actor, is {@link io.graphlane.inference.tensorparallel.TensorParallelStage#forward}: it submits
 * one shard step to each of the stage's T shard lanes, the shards all-gather rank 0's input, run
 * their layers with an all-reduce after attention and after the MLP (the CPU collectives, called
 * synchronously on the shard lanes' workers), and rank 0 leaves the stage output; the stage lane
 * waits for the T exact completions on its worker, so the step's completion, which the next stage
 * orders after, covers the whole step. A failure in any shard makes it leave its group, the others
 * fail naming it, and the step fails; the group stays poisoned, so later steps of that stage fail
 * with that cause rather than run out of order.
 *
 * <p>Refuses: a degree that does not divide the heads, the key/value heads or the intermediate
 * width, naming the config field and both values. Across nodes a rank would be a node's lane and
 * the group's transport the cluster's: the shard code only sees {@link io.graphlane.inference.tensorparallel.ShardComm}.
 */
package io.graphlane.inference.tensorparallel;
