package io.graphlane.backend.cpu.collective;

/**
 * How the members of one group hand each other {@link CollectiveMessage}s. In one JVM it is a
 * queue per member ({@link InProcessTransport}); across nodes, cluster-config's
 * {@code ClusterCollectiveTransport} carries the same messages between the ranks' nodes (a direct
 * socket per pair of ranks, or actor messages over Artery). A transport only moves messages: descriptor consensus, timeouts,
 * member loss and the algorithms live in {@link CpuCollectiveMember}.
 *
 * <p>Guarantees a member may rely on: messages from one sender to one receiver arrive in send
 * order, each once; {@link #send} never waits for the receiver. A transport that does not
 * {@link #sharesMemory share memory} has either copied a chunk's floats when {@link #send} returns or reads them from
 * the sender's storage until {@link #awaitSent} returns (or {@link #withdrawSent} does): the sender changes or frees
 * that storage only after one of them.
 */
public interface CollectiveTransport {

    /** A received message and the member that sent it. */
    record Envelope(int from, CollectiveMessage message) {
    }

    /** The number of members. */
    int size();

    /**
     * True when every member lives in this address space and {@link #send} hands a chunk's view
     * itself to the receiver: the sender then lends whole segments under a {@link ChunkLoan} and
     * leaves them unchanged until the receiver answers {@link CollectiveMessage.Consumed}. False
     * (the default, and what a transport across nodes answers) when {@link #send} copies the floats
     * before it returns, so the sender streams chunks of the group's chunk size and waits for nothing.
     */
    default boolean sharesMemory() {
        return false;
    }

    /** Delivers {@code message} from member {@code from} to member {@code to}; never blocks on the receiver. */
    void send(int from, int to, CollectiveMessage message);

    /**
     * The next message addressed to member {@code to}, from any sender, waiting at most
     * {@code timeoutNanos}; {@code null} if none arrived in time. Called only by that member's thread.
     */
    Envelope poll(int to, long timeoutNanos) throws InterruptedException;

    /**
     * Member {@code to} has finished reading {@code chunk}, a chunk (not lent) that {@link #poll} delivered from member
     * {@code from}: the transport may reuse the storage behind its values (a transport across nodes hands the member a
     * view of the very buffer the socket was read into, and reads the next chunk into it). Called once per such chunk, in
     * the order the chunks from {@code from} arrived, by that member's thread; a chunk of a failed collective may never
     * be. The default does nothing (the values are the member's own copy).
     */
    default void consumed(int to, int from, CollectiveMessage.Chunk chunk) {
    }

    /**
     * Waits at most {@code timeoutNanos} until no chunk member {@code from} sent reads its storage any more (a transport
     * across nodes writes a chunk to its socket straight from the tensor's memory). Called by that member's thread
     * before it changes what it sent; true once nothing is read, false if the time ran out first. The default answers
     * true at once ({@link #send} copied).
     */
    default boolean awaitSent(int from, long timeoutNanos) throws InterruptedException {
        return true;
    }

    /**
     * Member {@code from}'s collective failed: the chunks it sent that were not written yet are dropped, and when this
     * returns nothing reads its storage any more (a transport that cannot stop a write under way closes that link).
     * The default does nothing ({@link #send} copied).
     */
    default void withdrawSent(int from) {
    }
}
