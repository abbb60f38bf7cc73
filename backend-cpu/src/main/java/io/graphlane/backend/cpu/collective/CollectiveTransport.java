package io.graphlane.backend.cpu.collective;

/**
 * How the members of one group hand each other {@link CollectiveMessage}s. In one JVM it is a
 * queue per member ({@link InProcessTransport}); across nodes a transport would carry the same
 * messages between rank actors. A transport only moves messages: descriptor consensus, timeouts,
 * member loss and the algorithms live in {@link CpuCollectiveMember}.
 *
 * <p>Guarantees a member may rely on: messages from one sender to one receiver arrive in send
 * order, each once; {@link #send} never waits for the receiver.
 */
public interface CollectiveTransport {

    /** A received message and the member that sent it. */
    record Envelope(int from, CollectiveMessage message) {
    }

    /** The number of members. */
    int size();

    /** Delivers {@code message} from member {@code from} to member {@code to}; never blocks on the receiver. */
    void send(int from, int to, CollectiveMessage message);

    /**
     * The next message addressed to member {@code to}, from any sender, waiting at most
     * {@code timeoutNanos}; {@code null} if none arrived in time. Called only by that member's thread.
     */
    Envelope poll(int to, long timeoutNanos) throws InterruptedException;
}
