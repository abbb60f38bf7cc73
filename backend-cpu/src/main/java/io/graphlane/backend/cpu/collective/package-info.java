/**
 * Collectives over CPU lanes: {@link io.graphlane.backend.cpu.collective.CpuCollectives} implements
 * {@link io.graphlane.core.backend.CollectiveBackend} (all-reduce, all-gather, all-to-all with
 * variable counts) for a {@link io.graphlane.backend.cpu.collective.CpuCollectiveGroup} of lanes.
 *
 * <p>Owns: descriptor consensus, the ring algorithms, chunked streaming, timeouts and member loss.
 * A collective runs as lane work (or, inside a lane's own work, through
 * {@link io.graphlane.backend.cpu.collective.CpuCollectiveMember} directly): the members meet on
 * their lane workers, the device side, never on an actor or caller thread, and readiness is the
 * submission's exact completion.
 *
 * <p>Guarantees: before any payload the members exchange descriptors (operation, reduction,
 * dtype, shape or counts, sequence number), and a mismatch fails every member with an error naming
 * the first member that differs from member 0; a member that sends nothing for the group's timeout
 * is named as absent; a member that fails or leaves is named by every other member; nothing ever
 * waits without a deadline. After a failure the group is poisoned (its order can no longer be
 * proven) and refuses further collectives. Results are exact for any size, odd ones included, and
 * for any number of members, one included.
 *
 * <p>Transport: members only exchange {@link io.graphlane.backend.cpu.collective.CollectiveMessage}s
 * through a {@link io.graphlane.backend.cpu.collective.CollectiveTransport}. In one JVM that is a
 * queue per member; across nodes it is the cluster transport of {@code io.graphlane.cluster.collective}
 * (one endpoint per node), over which
 * {@link io.graphlane.backend.cpu.collective.CpuCollectiveMember#over} makes each node's member, with
 * consensus and the algorithms unchanged. Over a transport that does not share memory, a member streams its segments
 * as chunks of the group's chunk size and sends a few chunks ahead of the one it waits for; it folds (or copies) each
 * received chunk straight from the transport's buffer into its output, with no staging copy, and hands the buffer back
 * ({@link io.graphlane.backend.cpu.collective.CollectiveTransport#consumed}); a transport may write a chunk from the
 * tensor's own memory, so an exchange ends only once its chunks are written
 * ({@link io.graphlane.backend.cpu.collective.CollectiveTransport#awaitSent}) and a failed collective withdraws them.
 * The fold runs in blocks through two small float arrays (bulk copies in and out, a plain counted loop between that C2
 * vectorizes; {@code bench/}'s {@code ReduceBench} measures it against a plain array loop).
 *
 * <p>Refuses: reductions the CPU does not compute (product, average) with
 * {@link io.graphlane.core.backend.AbsentCapabilityException}, before anything is queued; send
 * counts that do not cover the tensor; a lane that is not a member.
 */
package io.graphlane.backend.cpu.collective;
