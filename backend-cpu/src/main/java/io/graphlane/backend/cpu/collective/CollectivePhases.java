package io.graphlane.backend.cpu.collective;

/**
 * Where one member's collectives spent their time, in nanoseconds summed since the member was made (all of it on the
 * member's own thread): {@code sendNanos} framing and queueing its chunks ({@link CollectiveTransport#send}),
 * {@code receiveNanos} copying received chunks into place (all-gather, all-to-all, the all-gather half of all-reduce),
 * {@code reduceNanos} folding received chunks into the output, and {@code waitNanos} waiting for the next message of
 * another member ({@link CollectiveTransport#poll}) and for its own chunks to be written
 * ({@link CollectiveTransport#awaitSent}).
 */
public record CollectivePhases(long sendNanos, long receiveNanos, long reduceNanos, long waitNanos) {

    /** These totals and {@code more}'s added up. */
    public CollectivePhases plus(CollectivePhases more) {
        return new CollectivePhases(sendNanos + more.sendNanos, receiveNanos + more.receiveNanos,
                reduceNanos + more.reduceNanos, waitNanos + more.waitNanos);
    }

    /** These totals less {@code earlier}'s: the time spent between the two readings. */
    public CollectivePhases minus(CollectivePhases earlier) {
        return new CollectivePhases(sendNanos - earlier.sendNanos, receiveNanos - earlier.receiveNanos,
                reduceNanos - earlier.reduceNanos, waitNanos - earlier.waitNanos);
    }
}
