package io.graphlane.cli.soak;

import io.graphlane.backend.cpu.collective.CollectiveMessage;
import io.graphlane.backend.cpu.collective.CollectiveTransport;
import io.graphlane.backend.cpu.collective.InProcessTransport;
import java.util.function.IntPredicate;

/**
 * An in-process collective transport whose waits time out in virtual time: a member's
 * {@link #poll} returns {@code null} (its timeout) only when the soak fires it, and the soak fires
 * the oldest wait only once every member that still has work is waiting with nothing to read (no
 * member can make progress any more). So a member that stopped is found absent at once and
 * deterministically, and a healthy member that is merely slow (cores busy) is never taken for
 * absent. Messages travel through an {@link InProcessTransport} (by reference or copying).
 *
 * <p>A fault: member {@code failing}'s send number {@code failAtSend} (counted from 0 over all its
 * sends) throws once, as if the member failed in the middle of a collective.
 */
final class VirtualTimeTransport implements CollectiveTransport {
    private final InProcessTransport inner;
    private final Object lock = new Object();
    /** Per member: waiting in {@link #poll} with nothing to read, since the wait numbered in {@link #since}. */
    private final boolean[] waiting;
    private final long[] since;
    private final boolean[] fire;
    private final int failing;
    private final long failAtSend;
    private long sends;
    private long waits;
    private long failedAtSend = -1;
    private boolean givenUp;

    /** A transport for {@code size} members; member {@code failing}'s send {@code failAtSend} throws (none if negative). */
    VirtualTimeTransport(int size, boolean byReference, int failing, long failAtSend) {
        this.inner = byReference ? new InProcessTransport(size) : InProcessTransport.copying(size);
        this.waiting = new boolean[size];
        this.since = new long[size];
        this.fire = new boolean[size];
        this.failing = failing;
        this.failAtSend = failAtSend;
    }

    @Override
    public int size() {
        return inner.size();
    }

    @Override
    public boolean sharesMemory() {
        return inner.sharesMemory();
    }

    @Override
    public void send(int from, int to, CollectiveMessage message) {
        synchronized (lock) {
            if (from == failing && failedAtSend < 0 && sends++ == failAtSend) {
                failedAtSend = failAtSend;
                throw new IllegalStateException("member " + from + " failed while sending " + kind(message) + " to member " + to + " (soak fault)");
            }
            inner.send(from, to, message);
            waiting[to] = false;
            lock.notifyAll();
        }
    }

    @Override
    public Envelope poll(int to, long timeoutNanos) throws InterruptedException {
        synchronized (lock) {
            while (true) {
                Envelope e = inner.poll(to, 0);
                if (e != null) {
                    waiting[to] = false;
                    return e;
                }
                if (fire[to] || givenUp) {
                    fire[to] = false;
                    waiting[to] = false;
                    return null;
                }
                if (!waiting[to]) {
                    waiting[to] = true;
                    since[to] = waits++;
                    lock.notifyAll(); // the soak looks whether everyone is stuck
                }
                lock.wait();
            }
        }
    }

    /** Whether the injected send failure happened. */
    boolean failed() {
        synchronized (lock) {
            return failedAtSend >= 0;
        }
    }

    /**
     * If every member for which {@code busy} holds is waiting with nothing to read, times out the one
     * waiting longest and returns its rank; else returns -1. A member not busy has no work left and
     * sends nothing more.
     */
    int fireIfStuck(IntPredicate busy) {
        synchronized (lock) {
            int oldest = -1;
            for (int r = 0; r < waiting.length; r++) {
                if (busy.test(r)) {
                    if (!waiting[r] || fire[r]) {
                        return -1;
                    }
                    if (oldest < 0 || since[r] < since[oldest]) {
                        oldest = r;
                    }
                }
            }
            if (oldest >= 0) {
                fire[oldest] = true;
                waiting[oldest] = false;
                lock.notifyAll();
            }
            return oldest;
        }
    }

    /** From now on every wait times out at once (the scenario hung: its members must not stay blocked). */
    void giveUp() {
        synchronized (lock) {
            givenUp = true;
            lock.notifyAll();
        }
    }

    /** Wakes {@link #awaitChange} (an operation ended). */
    void wake() {
        synchronized (lock) {
            lock.notifyAll();
        }
    }

    /** Waits at most {@code millis} for a message, a wait to begin, or {@link #wake}. */
    void awaitChange(long millis) throws InterruptedException {
        synchronized (lock) {
            lock.wait(millis);
        }
    }

    private static String kind(CollectiveMessage m) {
        return m.getClass().getSimpleName().toLowerCase(java.util.Locale.ROOT);
    }
}
