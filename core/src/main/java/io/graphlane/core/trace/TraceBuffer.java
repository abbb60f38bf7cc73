package io.graphlane.core.trace;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * A bounded, lock-free trace recorder: keeps the first {@code capacity} events and counts the
 * rest as dropped. Recording is one atomic increment and one array store.
 */
public final class TraceBuffer implements TraceRecorder {
    private final AtomicReferenceArray<TraceEvent> slots;
    private final AtomicInteger next = new AtomicInteger();
    private final AtomicLong dropped = new AtomicLong();

    /** A buffer that keeps at most {@code capacity} events. */
    public TraceBuffer(int capacity) {
        if (capacity <= 0) {
            throw new IllegalArgumentException("trace buffer capacity must be > 0, got " + capacity);
        }
        this.slots = new AtomicReferenceArray<>(capacity);
    }

    @Override
    public boolean enabled() {
        return true;
    }

    @Override
    public void record(TraceEvent event) {
        int i = next.getAndIncrement();
        if (i < 0 || i >= slots.length()) {
            next.set(slots.length()); // keeps the index from wrapping around after very many drops
            dropped.incrementAndGet();
            return;
        }
        slots.set(i, event);
    }

    /** The events kept so far in recording order; a slot claimed but not yet written is skipped. */
    @Override
    public List<TraceEvent> events() {
        int n = Math.min(next.get(), slots.length());
        List<TraceEvent> out = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            TraceEvent e = slots.get(i);
            if (e != null) {
                out.add(e);
            }
        }
        return out;
    }

    /** How many events did not fit. */
    public long dropped() {
        return dropped.get();
    }

    /** The most events this buffer keeps. */
    public int capacity() {
        return slots.length();
    }
}
