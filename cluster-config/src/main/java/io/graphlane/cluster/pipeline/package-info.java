/**
 * Pipeline stages across the nodes of a cluster.
 *
 * <p>Design: every node runs one {@link io.graphlane.cluster.pipeline.StageHost} that owns the lanes of the stages
 * its rank hosts (stage i on rank i mod N, weights of those stages only, loaded by
 * {@link io.graphlane.cluster.pipeline.ModelStageHosting}) and is registered with the Receptionist under
 * {@link io.graphlane.cluster.pipeline.StageHostKeys#stage} for each of them. The serving node runs a
 * {@link io.graphlane.cluster.pipeline.ClusterEngine} behind a {@link io.graphlane.cluster.pipeline.ClusterPipeline}
 * (the {@code TextGenerator} the OpenAI server serves). Each step of a request is one
 * {@link io.graphlane.cluster.pipeline.StageHost.Run} message sent to the host of stage 0 with the route through the
 * hosts of the later stages; stage k submits its forward on its lane, then a copy-out ordered after the forward's
 * exact completion, and sends stage k+1 an {@code ActivationFrame} (Kryo, {@code WireTensor}) that names the
 * producing work as (node, lane, sequence). The consumer submits its work only on the frame's arrival: the frame is
 * sent only after the producer's exact completion, so its arrival is the producer's success, pushed by the owning
 * node instead of pulled by a subscription (which would cost a second round trip for the same fact); stages order
 * across nodes with no global barrier. The last stage sends the logits to the engine, which samples and sends the
 * next step.
 *
 * <p>Guarantees: a request's tokens are in order (one step in flight per request), its deadline is checked before
 * each step and a cancel is reported at once (the lifecycle of {@link io.graphlane.scheduler.pipeline.RequestLedger},
 * shared with the engine over local lanes); a failed forward poisons every
 * later stage of that step on whatever node it runs ({@link io.graphlane.cluster.pipeline.StageHost.Poisoned}, never
 * submitted) and the request fails with a {@link io.graphlane.cluster.pipeline.StageFailedException} naming the
 * stage and node, its cause the remote failure; an arrived activation lives on its lane only while the consumer's
 * forward reads it and an output is released by the copy-out that reads it, each exactly once; when a node hosting a
 * stage becomes unreachable or leaves, every request fails at once with UNAVAILABLE naming the node and stage, and
 * new ones are refused until every stage has a reachable host again (a restarted node registers anew). A
 * tensor-parallel stage is hosted by its shard 0's {@link io.graphlane.cluster.pipeline.StageHost} with the
 * {@link io.graphlane.cluster.pipeline.ShardHost}s of its other shards; its
 * {@link io.graphlane.cluster.pipeline.StageLead} forms it into a fresh collective group at startup and again whenever
 * a lost shard's node (shard 0's included) is replaced, and it is registered only while all its shards run one group.
 *
 * <p>Refuses: a step sent to a node that does not host its stage (it poisons the step), and frames of classes
 * outside {@link io.graphlane.actors.wire.WireRegistry} and this protocol ({@link
 * io.graphlane.cluster.pipeline.StageWireSerializer}).
 */
package io.graphlane.cluster.pipeline;
