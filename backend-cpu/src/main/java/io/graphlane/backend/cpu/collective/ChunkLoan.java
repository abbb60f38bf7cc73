package io.graphlane.backend.cpu.collective;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * The sender's side of a chunk handed over by reference (a view of the sender's own storage, over a
 * transport that {@link CollectiveTransport#sharesMemory shares memory}): the receiver reads the view
 * only between {@link #beginRead} and {@link #endRead}; the sender, when it fails before the
 * receiver answered, {@link #withdraw withdraws} the loan so that its storage is never read after it
 * was changed or freed.
 */
public final class ChunkLoan {
    private static final int OFFERED = 0;
    private static final int READING = 1;
    private static final int RETURNED = 2;
    private static final int WITHDRAWN = 3;

    private final AtomicInteger state = new AtomicInteger(OFFERED);

    /** True if the receiver may now read the view; false if the sender withdrew it (the sender failed). */
    public boolean beginRead() {
        return state.compareAndSet(OFFERED, READING);
    }

    /** The receiver has finished reading the view and will not touch it again. */
    public void endRead() {
        state.set(RETURNED);
    }

    /**
     * Called by the sender only: when it returns, the receiver is not reading the view and never
     * will. A read already under way is a bounded copy, so this waits for it to finish.
     */
    void withdraw() {
        while (!state.compareAndSet(OFFERED, WITHDRAWN)) {
            int now = state.get();
            if (now == RETURNED || now == WITHDRAWN) {
                return;
            }
            Thread.onSpinWait();
            Thread.yield();
        }
    }
}
