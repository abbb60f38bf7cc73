package io.graphlane.cluster.collective;

import io.graphlane.backend.cpu.collective.CollectiveMessage;
import io.graphlane.backend.cpu.collective.CollectiveTransport.Envelope;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.function.IntConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What one rank knows of each other rank of its group: live, lost, or departed (it closed its transport in order).
 * Shared by the rank actor (cluster events, death watch) and the socket payload plane (a socket that ends without a
 * goodbye), so whichever notices first reports a loss, and only once: the one {@link CollectiveMessage.Left} naming the
 * rank goes into the member's inbox. A rank that departed is never reported lost, and a rank reported lost never
 * departs.
 */
final class PeerStatus {
    private static final Logger LOG = LoggerFactory.getLogger(PeerStatus.class);
    private static final int LIVE = 0;
    private static final int LOST = 1;
    private static final int DEPARTED = 2;

    private final String group;
    private final int rank;
    private final BlockingQueue<Envelope> inbox;
    private final AtomicIntegerArray states;
    private volatile IntConsumer onLost = r -> { };

    PeerStatus(String group, int rank, int size, BlockingQueue<Envelope> inbox) {
        this.group = group;
        this.rank = rank;
        this.inbox = inbox;
        this.states = new AtomicIntegerArray(size);
    }

    /** The number of ranks of the group. */
    int size() {
        return states.length();
    }

    /** Called with a rank once it is reported lost (the plane closes its socket). */
    void onLost(IntConsumer listener) {
        this.onLost = listener;
    }

    /**
     * Reports rank {@code r} lost, naming {@code why}, unless it was reported already or departed in order.
     *
     * @return true if this call reported it
     */
    boolean lost(int r, String why) {
        if (!states.compareAndSet(r, LIVE, LOST)) {
            return false;
        }
        inbox.add(new Envelope(r, new CollectiveMessage.Left(r, "member " + r + " of collective group " + group + " was lost: " + why)));
        LOG.warn("collective group {} rank {}: member {} was lost: {}", group, rank, r, why);
        onLost.accept(r);
        return true;
    }

    /** Records that rank {@code r} closed its transport in order; false if it had been reported lost first. */
    boolean depart(int r) {
        return states.compareAndSet(r, LIVE, DEPARTED) || states.get(r) == DEPARTED;
    }

    boolean isLost(int r) {
        return states.get(r) == LOST;
    }

    boolean isDeparted(int r) {
        return states.get(r) == DEPARTED;
    }

    /** Neither lost nor departed. */
    boolean isLive(int r) {
        return states.get(r) == LIVE;
    }
}
