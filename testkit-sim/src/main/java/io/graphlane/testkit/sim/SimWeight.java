package io.graphlane.testkit.sim;

import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A device-tier weight of the simulated device, the destination of a promotion: its contents are written by the copy
 * when the copy ends, so work that reads it before its promotion completed finds it unpublished and fails, as reading
 * half-copied device memory would give wrong values. Closing it returns its bytes to the budget of its
 * {@link SimTransferBackend} exactly once, and only once the copy that writes it no longer holds it.
 */
public final class SimWeight implements AutoCloseable {
    private final String name;
    private final long bytes;
    private final SimTransferBackend owner;
    /** Holders: the caller's handle and, while it runs, the copy. */
    private final AtomicInteger holders = new AtomicInteger(1);
    private final AtomicBoolean closed = new AtomicBoolean();
    private volatile boolean published;
    private volatile boolean taken;
    private volatile long value;

    SimWeight(String name, long bytes, SimTransferBackend owner) {
        this.name = Objects.requireNonNull(name, "name");
        this.bytes = bytes;
        this.owner = owner;
    }

    /** What the weight holds. */
    public String name() {
        return name;
    }

    /** Its size. */
    public long bytes() {
        return bytes;
    }

    /**
     * Its contents, read by work ordered after the promotion that wrote them.
     *
     * @throws IllegalStateException naming the weight if the copy has not written it (yet), or its bytes were freed
     */
    public long read() {
        if (!published) {
            throw new IllegalStateException("simulated weight " + name + " was read before its promotion completed");
        }
        if (holders.get() <= 0) {
            throw new IllegalStateException("simulated weight " + name + " was read after its device bytes were freed");
        }
        return value;
    }

    /** Whether its device bytes went back to the budget. */
    public boolean isFreed() {
        return holders.get() <= 0;
    }

    /** Its bytes were taken from the device tier (by the copy, when it started). */
    void taken() {
        taken = true;
    }

    boolean wasTaken() {
        return taken;
    }

    void publish(long contents) {
        this.value = contents;
        this.published = true;
    }

    /** Another holder (the running copy). */
    AutoCloseable hold() {
        holders.incrementAndGet();
        return this::release;
    }

    /** Lets go of the caller's handle; the bytes return once the copy let go too. Idempotent for the caller's handle. */
    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            release();
        }
    }

    private void release() {
        if (holders.decrementAndGet() == 0) {
            owner.free(this);
        }
    }

    @Override
    public String toString() {
        return "SimWeight(" + name + ", " + bytes + " bytes" + (published ? "" : ", unpublished") + ")";
    }
}
