/**
 * Pipeline stages across the nodes of a cluster, driven by the one pipeline engine.
 *
 * <p>Design: every node runs one {@link io.graphlane.cluster.pipeline.StageHost} that owns the lanes of the stages
 * its rank hosts (stage i on rank i mod N, weights of those stages only, loaded through a materialization supervisor
 * by {@link io.graphlane.cluster.pipeline.ModelStageHosting}) and is registered with the Receptionist under
 * {@link io.graphlane.cluster.pipeline.StageKeys#host} for each of them. The serving node runs a
 * {@link io.graphlane.cluster.pipeline.ClusterPipeline} (the {@code TextGenerator} the OpenAI server serves): the
 * {@link io.graphlane.scheduler.pipeline.PipelineEngine} over one proxy lane per stage, lane actors over
 * {@link io.graphlane.cluster.pipeline.StageLinks}. Stage k's work of a micro-batch is submitted to proxy lane k ordered
 * after stage k−1's handle, as over local lanes; the link chains it on that completion and the
 * {@link io.graphlane.cluster.pipeline.StageDirectory} sends the stage's host one batched
 * {@link io.graphlane.cluster.pipeline.StageHost.Step} (every request's segment, the tokens or the activation as a
 * {@code WireTensor}, and the KV-cache forgets and rewinds asked since the previous step to that host). The host runs
 * them in one work on its lane and answers the activation, or the last stage's logits, which fill the output slot and
 * complete the work; the engine samples from the logits with each request's sampling state.
 *
 * <p>Guarantees: those of the engine (tokens in order, one step per request in flight, deadlines, cancels, a failed
 * micro-batch's requests rewound and run alone, bounded admission); a failed or refused step fails with a
 * {@link io.graphlane.cluster.pipeline.StageFailedException} naming the stage and node, and the later stages of that
 * step are poisoned on the serving node, never sent; an output slot is freed once, by the engine, after its reader
 * completed; when a node hosting a stage becomes unreachable or leaves, the steps sent there fail at once with
 * UNAVAILABLE naming the node and stage, and new requests are refused until every stage has a reachable host again
 * (a restarted node registers anew). A tensor-parallel stage is hosted by its shard 0's
 * {@link io.graphlane.cluster.pipeline.StageHost} with the {@link io.graphlane.cluster.pipeline.ShardHost}s of its other
 * shards, told every step and cache change in order. Every shard runs on two lanes of its node, a compute lane and a
 * collective lane, and plans each step as works on them
 * ({@link io.graphlane.inference.tensorparallel.CollectiveShard#plan}): the all-gather of the stage input and each
 * all-reduce on the collective lane, the layers' partial and reduce works on the compute lane, ordered by completion
 * handles, so no compute work runs a collective or waits for another node in its body; every shard's lanes keep the
 * steps' order ({@link io.graphlane.inference.tensorparallel.ShardLanes}), so all shards enter the same collectives
 * in the same order. Its {@link io.graphlane.cluster.pipeline.StageLead} forms it into
 * a fresh collective group at startup and again whenever a lost shard's node (shard 0's included) is replaced, and it
 * is registered only while all its shards run one group. Stage and shard hosts run supervised
 * ({@link io.graphlane.cluster.pipeline.HostSupervision}): one that stops on a failure of its own marks the node failed.
 *
 * <p>Refuses: a step sent to a node that does not host its stage, a malformed step (naming the field), and frames of
 * classes outside {@link io.graphlane.actors.wire.WireRegistry} and this protocol
 * ({@link io.graphlane.cluster.pipeline.StageWireSerializer}).
 */
package io.graphlane.cluster.pipeline;
