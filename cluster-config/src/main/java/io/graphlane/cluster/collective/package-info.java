/**
 * Collectives across nodes: the {@link io.graphlane.backend.cpu.collective.CollectiveTransport} of a group whose ranks
 * live on different nodes of one Pekko cluster. {@link io.graphlane.cluster.collective.ClusterCollectives#join} makes a
 * node's {@link io.graphlane.cluster.collective.ClusterCollectiveTransport} for one rank (completing once every rank has
 * joined, failing at a deadline naming the missing ranks), and
 * {@code CpuCollectiveMember.over(group, rank, transport, settings)} makes the rank's member over it; the member keeps
 * descriptor consensus, the ring algorithms, timeouts and poisoning exactly as in one JVM, and its collectives run
 * synchronously on the calling lane's worker.
 *
 * <p>Owns: one rank actor per (group, rank) under {@code /system/graphlane-collectives}, found through the receptionist
 * (one service key per group); the wire format ({@link io.graphlane.cluster.collective.CollectiveWireSerializer}, Kryo ids
 * 210-214, floats copied in bulk straight into Artery's buffers); credit-based flow control (at most
 * {@code graphlane.cluster.collective.window-chunks} chunks in flight per peer), so a large tensor streams as a pipeline of
 * chunks of the group's chunk size on Artery's large-message stream and no bounded queue ever drops one.
 *
 * <p>Guarantees: {@code send} copies and returns at once; per pair of ranks messages arrive in order, each once; a peer
 * whose rank actor stops, whose node becomes unreachable, leaves or is removed is reported once into the member's inbox
 * as a {@code Left} naming its rank, so every surviving member's collective fails naming it within the cluster's
 * failure-detection bounds (a node that leaves: about a second; a crashed one: once it is unreachable, a few seconds),
 * never by hanging. {@code close} is orderly: what the rank sent is delivered first, and a rank that closed is not
 * reported as lost (a later collective waiting for it fails after the member timeout, naming it absent).
 *
 * <p>Refuses: a chunk size whose frame exceeds Artery's frame for the rank actors, a rank claimed twice, ranks told
 * different group sizes, and any use of a transport as another rank than its own.
 */
package io.graphlane.cluster.collective;
