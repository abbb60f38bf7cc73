/**
 * Tensor parallelism for the Llama family: each pipeline stage's layers split over T shards
 * (Megatron-style). Rank r holds its query and key/value heads (rows of q/k/v and their biases), its
 * intermediate columns of the MLP (rows of gate/up), and the matching input slices of the
 * row-parallel projections (columns of o and down, in the Hugging Face layout where a weight row is
 * an output feature); norms and the output bias are replicated; the embedding and the head live on
 * rank 0 only. Every shard is a checkpoint recipe whose range is pushed down to the lease
 * ({@link io.graphlane.checkpoint.recipe.DerivedWeight#shard}): a rank never maps what it does not own.
 * {@link io.graphlane.inference.tensorparallel.SupervisedShardLoader} hands each shard's selection to the
 * {@link io.graphlane.actors.materialize.MaterializationSupervisor} as one atomic unit (as
 * {@code SupervisedWeightsLoader} does a whole stage): realized on a loading lane, every lease held until its
 * realization's exact completion, all of the shard bound or none; the loader owns the bound weights until its
 * {@code release} (a stage's close) or {@code close}.
 *
 * <p>Two paths run the same shard math ({@link io.graphlane.inference.tensorparallel.LlamaShard} over
 * {@link io.graphlane.inference.llama.DecoderLayers}), each planning a step as lane works ordered by completion
 * handles, so that no work waits for another shard inside its body:
 *
 * <ul>
 *   <li><b>In one JVM</b> ({@code run/serve/logits --tensor-parallel T}, {@code InferencePipeline}):
 *       a stage is a {@link io.graphlane.inference.tensorparallel.TensorParallelStage}, whose T shards
 *       run on T shard lanes, each lane owned by its lane actor; there is no stage lane and no
 *       collective. The pipeline engine sends every shard's works through the shard's lane actor as
 *       part of the step's plan ({@link io.graphlane.inference.tensorparallel.TensorParallelStage#plan}):
 *       per layer, each rank's partial work (its share of attention's o-projection, then of the MLP's
 *       down-projection), and on each lane a work that sums every rank's partial into its residual stream
 *       ordered {@code after} all T partial works' completion handles (then goes on with the next partial).
 *       A reduce reads the other ranks' partial buffers once their completions passed; no work waits for
 *       another rank. The stage's exits are each rank's last work, so the next stage's works order after
 *       every shard. A failed shard work fails its step only (the works ordered after it are poisoned and
 *       never run; no cache advances on a rank whose last work did not run); the next step runs as usual.</li>
 *   <li><b>Across nodes</b> ({@code graphlane node --tensor-parallel T}, {@code cluster-config}'s
 *       {@code StageHost}, {@code ShardHost}): each node holds one shard, a
 *       {@link io.graphlane.inference.tensorparallel.CollectiveShard} with a
 *       {@link io.graphlane.inference.tensorparallel.ShardComm} over the cluster transport
 *       ({@link io.graphlane.inference.tensorparallel.CpuShardComm}), on two lanes of its CPU device, each owned by its
 *       lane actor: a compute lane and a collective lane (as a GPU's compute stream and NCCL stream). A step is planned
 *       ({@link io.graphlane.inference.tensorparallel.CollectiveShard#plan}) as the all-gather of rank 0's input and each
 *       all-reduce on the collective lane, each between the partial work it reduces and the reduce work that adds it
 *       to the residual stream on the compute lane, ordered by completion handles; the compute lane never runs a
 *       collective. {@link io.graphlane.inference.tensorparallel.ShardLanes} submits a collective group's works so
 *       each lane keeps the order the steps were submitted in; since every rank is given the steps in the same
 *       order, every rank enters the same collectives in the same order. A work that fails leaves the group from its
 *       own body, so the other ranks' collectives fail naming it instead of waiting; the group is broken from then
 *       on and the stage re-forms into a fresh one.</li>
 * </ul>
 *
 * <p>On both paths a step's buffers (residual streams, scratch, the partials) are retained by every work of the step
 * and freed exactly once after the last one completed, also when a work failed or never ran (one
 * {@code StepBuffers} share per work).
 *
 * <p>Refuses: a degree that does not divide the heads, the key/value heads or the intermediate width,
 * naming the config field, the tensors it splits and both values; a shard whose tensors are missing or
 * misshapen, naming the shard, the tensor and both shapes, with nothing bound and no lease open.
 */
package io.graphlane.inference.tensorparallel;
