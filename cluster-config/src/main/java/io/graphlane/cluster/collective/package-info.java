/**
 * Collectives across nodes: the {@link io.graphlane.backend.cpu.collective.CollectiveTransport} of a group whose ranks
 * live on different nodes of one Pekko cluster. {@link io.graphlane.cluster.collective.ClusterCollectives#join} makes a
 * node's {@link io.graphlane.cluster.collective.ClusterCollectiveTransport} for one rank (completing once every rank has
 * joined, failing at a deadline naming the missing ranks), and
 * {@code CpuCollectiveMember.over(group, rank, transport, settings)} makes the rank's member over it; the member keeps
 * descriptor consensus, the ring algorithms, timeouts and poisoning exactly as in one JVM, and its collectives run
 * synchronously on the calling lane's worker.
 *
 * <p>Two planes. The control plane is always Artery: one rank actor per (group, rank) under
 * {@code /system/graphlane-collectives}, found through the receptionist (one service key per group), greeting the others
 * and watching them (death watch, the cluster's membership and reachability). The payload plane, chosen by
 * {@code graphlane.cluster.collective.payload}, carries every member message (descriptors, chunks, departures):
 * <ul>
 *   <li>{@code socket} (the default): a direct TCP connection per pair of ranks
 *       ({@link io.graphlane.cluster.collective.SocketPayloadPlane}). Each rank binds an ephemeral port on its node's
 *       Artery host and announces it, with a join nonce, in its greeting; the lower rank of each pair connects to the
 *       higher one and identifies itself (each accepted connection on a thread of its own under its own deadline, so
 *       silent or garbage connections delay no one); the join completes once every pair's socket is up. With Artery
 *       over TLS each socket runs TLS with Artery's key and trust stores, both sides presenting a certificate
 *       ({@link io.graphlane.cluster.collective.PayloadTls}); without it the payload is unencrypted. Frames are the Kryo frames
 *       of {@link io.graphlane.cluster.collective.CollectiveWireSerializer} behind a length; one writer and one reader
 *       thread per peer. A CPU tensor's chunk is written from the tensor's own memory behind its framed header, and a
 *       received chunk is a view of the pooled buffer its frame was read into, which the member folds or copies straight
 *       into its output and then gives back. Memory is bounded on the receiving side: a link's reader stops once
 *       {@code window-chunks} of its buffers wait for the member, and TCP's flow control holds the sender. Two ranks on
 *       one host ({@code graphlane.cluster.collective.shared-memory = on}, the default) move their frames through a
 *       shared-memory segment instead ({@link io.graphlane.cluster.collective.SharedMemoryChannel}): the lower rank
 *       offers one over the pair's socket once its handshake is accepted, the higher rank maps it if it finds the
 *       offer's token there, and the socket stays up as doorbell and lifeline; a chunk is copied into the ring once
 *       and the member folds or copies it from where it lies in the ring.</li>
 *   <li>{@code artery}: actor messages between the rank actors on Artery's large-message stream (Kryo ids 210-214,
 *       floats copied in bulk straight into Artery's buffers) under credit-based flow control (at most
 *       {@code window-chunks} chunks in flight per peer), so no bounded Artery queue ever drops one.</li>
 * </ul>
 * Every rank of a group must use the same plane; a join with mixed planes fails naming the rank and the key.
 *
 * <p>Guarantees: {@code send} returns at once (a chunk it writes from the tensor's memory is written, or withdrawn,
 * before the member changes that memory: {@code awaitSent}, {@code withdrawSent}); per pair of ranks messages arrive in order, each once (with
 * sockets, across every kind, since they share the pair's one connection); a peer whose payload socket ends without a
 * goodbye, whose rank actor stops, whose node leaves, is downed or removed is reported once, whichever is noticed
 * first, into the member's inbox as a {@code Left} naming its rank and node, so every surviving member's collective
 * fails naming it (a crashed process: as soon as its sockets close; a node that leaves: about a second; a host that is
 * gone without a word: once it is downed, or at the member timeout), never by hanging. A node that is only unreachable
 * for a while (a busy node the failure detector missed) is no loss: its messages still arrive, and the group runs on. {@code close} is orderly: what the rank sent
 * is delivered first, then a goodbye, and a rank that closed is not reported as lost (a later collective waiting for it
 * fails after the member timeout, naming it absent).
 *
 * <p>NCCL's control plane: {@link io.graphlane.cluster.collective.NcclControlPlane#join} joins a CPU group
 * {@code nccl-<group>} over this transport, through which rank 0's {@code ncclUniqueId} reaches every rank and each
 * GPU collective's descriptor is agreed on before NCCL moves a byte (backend-gpu is an optional dependency of this
 * module: only {@code NcclControlPlane.communicator} needs it at run time).
 *
 * <p>Refuses: a chunk size whose frame exceeds the plane's frame (Artery's large frame, or 1 GiB for a socket frame), a rank
 * claimed twice, ranks told different group sizes or using different planes, a payload connection with another group's,
 * rank's or join's identity (logged, the connection closed), and any use of a transport as another rank than its own.
 */
package io.graphlane.cluster.collective;
