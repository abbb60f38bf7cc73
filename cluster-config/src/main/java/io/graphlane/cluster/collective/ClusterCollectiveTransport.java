package io.graphlane.cluster.collective;

import io.graphlane.backend.cpu.collective.CollectiveMessage;
import io.graphlane.backend.cpu.collective.CollectiveTransport;
import java.nio.FloatBuffer;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.pekko.actor.typed.ActorRef;

/**
 * This node's endpoint of one collective group across nodes: the {@link CollectiveTransport} of rank
 * {@link #localRank()}, made by {@link ClusterCollectives#join}. Make the rank's member over it with
 * {@code CpuCollectiveMember.over(group, localRank(), transport, settings)}.
 *
 * <p>Owns: the rank's inbox (what {@link #poll} reads), its rank actor and, with {@code payload = socket}, its
 * {@link SocketPayloadPlane} (a TCP connection per peer); messages travel over those sockets, or with
 * {@code payload = artery} through the rank actors over Artery (framed by {@link CollectiveWireSerializer} either way).
 * Guarantees: {@link #send} returns at once, never waiting for the receiver or the network (with sockets, a chunk whose
 * floats are a direct little-endian buffer, as a CPU tensor's are, is written from that memory: its member waits in
 * {@link #awaitSent} before it changes them; any other chunk, and with Artery every chunk, is copied before it returns);
 * messages from one rank to another arrive in send order, each once; at most a window of chunks per peer waits unpolled
 * (sockets: the reader stops reading; Artery: credit returned as this rank's member consumes them), so a large tensor
 * streams and no queue overflows; a peer lost (its socket ended without a goodbye, or stopped, left, downed, removed;
 * not merely unreachable for a while) appears in the inbox once as a {@link CollectiveMessage.Left} naming its rank.
 *
 * <p>Refuses: sending as or polling for another rank than the local one, a chunk lent by reference (this transport
 * does not share memory), and any send after {@link #close}.
 */
public final class ClusterCollectiveTransport implements CollectiveTransport, AutoCloseable {
    private final String group;
    private final int rank;
    private final int size;
    private final LinkedBlockingQueue<Envelope> inbox;
    private final ActorRef<CollectiveRankActor.Command> actor;
    private final List<ActorRef<CollectiveRankActor.Command>> creditTargets;
    private final int creditBatch;
    private final Duration closeTimeout;
    private final int[] consumed;
    private final CompletionStage<?> systemTerminated;
    private final SocketPayloadPlane plane;
    private volatile boolean closed;

    ClusterCollectiveTransport(String group, int rank, int size, LinkedBlockingQueue<Envelope> inbox,
                               ActorRef<CollectiveRankActor.Command> actor, List<ActorRef<CollectiveRankActor.Command>> creditTargets,
                               int creditBatch, Duration closeTimeout, CompletionStage<?> systemTerminated, SocketPayloadPlane plane) {
        this.group = group;
        this.rank = rank;
        this.size = size;
        this.inbox = inbox;
        this.actor = actor;
        this.creditTargets = creditTargets;
        this.creditBatch = creditBatch;
        this.closeTimeout = closeTimeout;
        this.consumed = new int[size];
        this.systemTerminated = systemTerminated;
        this.plane = plane;
    }

    /** The rank this node holds in the group. */
    public int localRank() {
        return rank;
    }

    /** The group's name. */
    public String group() {
        return group;
    }

    @Override
    public int size() {
        return size;
    }

    /** False: chunks cross nodes as copies. */
    @Override
    public boolean sharesMemory() {
        return false;
    }

    @Override
    public void send(int from, int to, CollectiveMessage message) {
        Objects.requireNonNull(message, "message");
        if (from != rank) {
            throw new IllegalArgumentException("collective group " + group + ": this node's transport sends as rank " + rank + ", not " + from);
        }
        if (to < 0 || to >= size || to == rank) {
            throw new IllegalArgumentException("collective group " + group + ": rank " + rank + " cannot send to rank " + to
                    + " (ranks 0.." + (size - 1) + ", other than itself)");
        }
        if (closed) {
            throw new IllegalStateException("collective group " + group + ": the transport of rank " + rank + " is closed");
        }
        if (message instanceof CollectiveMessage.Chunk chunk && chunk.loan() != null) {
            throw new IllegalArgumentException("collective group " + group + ": a chunk lent by reference cannot cross nodes");
        }
        if (plane != null) {
            // Framed (the floats copied) on this thread; the link's writer thread does the rest.
            plane.send(to, message);
            return;
        }
        CollectiveMessage outgoing = message;
        if (message instanceof CollectiveMessage.Chunk chunk) {
            FloatBuffer values = chunk.values();
            float[] copy = new float[values.remaining()];
            values.get(values.position(), copy);
            outgoing = new CollectiveMessage.Chunk(chunk.sequence(), chunk.offset(), FloatBuffer.wrap(copy), null);
        }
        actor.tell(new CollectiveRankActor.Send(to, outgoing));
    }

    @Override
    public Envelope poll(int to, long timeoutNanos) throws InterruptedException {
        if (to != rank) {
            throw new IllegalArgumentException("collective group " + group + ": this node's transport receives for rank " + rank + ", not " + to);
        }
        Envelope envelope = inbox.poll(Math.max(0, timeoutNanos), TimeUnit.NANOSECONDS);
        if (envelope != null && envelope.message() instanceof CollectiveMessage.Chunk && plane == null) {
            int from = envelope.from();
            if (++consumed[from] >= creditBatch) {
                creditTargets.get(from).tell(new CollectiveRankActor.Credit(rank, consumed[from]));
                consumed[from] = 0;
            }
        }
        return envelope;
    }

    /**
     * With sockets, gives the buffer {@code chunk} was read into back to its link's reader (the member read the floats
     * straight from it); with Artery, nothing (the chunk's floats are a copy, and credit returned when it was polled).
     */
    @Override
    public void consumed(int to, int from, CollectiveMessage.Chunk chunk) {
        if (plane != null) {
            plane.consumed(from, chunk);
        }
    }

    /** With sockets, waits until the chunks this rank sent straight from its tensors are written; with Artery, true (copied). */
    @Override
    public boolean awaitSent(int from, long timeoutNanos) throws InterruptedException {
        return plane == null || plane.awaitSent(timeoutNanos);
    }

    /**
     * The ranks whose link from this rank carries its payload through shared memory (both ranks on one host, with
     * {@code graphlane.cluster.collective.shared-memory} on), in rank order; empty over Artery.
     */
    public java.util.List<Integer> sharedMemoryPeers() {
        java.util.List<Integer> peers = new java.util.ArrayList<>();
        for (int r = 0; plane != null && r < size(); r++) {
            if (r != rank && plane.sharesMemoryWith(r)) {
                peers.add(r);
            }
        }
        return peers;
    }

    /** With sockets, drops the chunks this rank sent and not yet written, and waits for one being written (see the plane). */
    @Override
    public void withdrawSent(int from) {
        if (plane != null) {
            plane.withdrawSent(closeTimeout.toNanos());
        }
    }

    /**
     * Closes this rank's endpoint in order: what it sent is delivered first, then every live peer is told that this rank
     * left in order (so it is not reported as lost), and the rank actor stops once they acknowledged or after the
     * group's member timeout. The returned stage completes then; it never fails.
     */
    public CompletionStage<Void> closeAsync() {
        closed = true;
        CompletableFuture<Void> done = new CompletableFuture<>();
        if (plane != null) {
            plane.closeAsync(closeTimeout.toMillis()).whenComplete((v, e) -> actor.tell(new CollectiveRankActor.Close(done)));
        } else {
            actor.tell(new CollectiveRankActor.Close(done));
        }
        // With its actor system gone, the rank actor is gone too.
        systemTerminated.whenComplete((t, e) -> done.complete(null));
        return done;
    }

    /** {@link #closeAsync()}, waiting for it at most the group's member timeout and a little more. */
    @Override
    public void close() {
        try {
            closeAsync().toCompletableFuture().get(closeTimeout.toMillis() + 5_000, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException | TimeoutException e) {
            // The rank actor stops at its own deadline; nothing is left to wait for.
        }
    }

    @Override
    public String toString() {
        return "ClusterCollectiveTransport(" + group + ", rank " + rank + " of " + size + ")";
    }
}
