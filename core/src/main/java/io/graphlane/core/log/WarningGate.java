package io.graphlane.core.log;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * Lets one warning through per interval and counts those held back, so that a flood of bad input (hostile peers,
 * malformed requests) costs one log line per interval instead of one per event. The caller logs a warning when
 * {@link #admit()} lets it through, naming how many were held back since the previous one, and the others at debug.
 * Thread-safe and lock-free.
 */
public final class WarningGate {
    /** What {@link #admit()} answers for a warning to hold back. */
    public static final long HELD_BACK = -1;

    private final long intervalNanos;
    private final LongSupplier clock;
    private final AtomicLong lastAdmitted;
    private final AtomicLong heldBack = new AtomicLong();

    /** A gate that lets one warning through per {@code interval}; the first is let through at once. */
    public WarningGate(Duration interval) {
        this(interval, System::nanoTime);
    }

    /** A gate reading time in nanoseconds from {@code clock}. */
    public WarningGate(Duration interval, LongSupplier clock) {
        if (interval.isNegative() || interval.isZero()) {
            throw new IllegalArgumentException("the interval must be positive, got " + interval);
        }
        this.intervalNanos = interval.toNanos();
        this.clock = clock;
        this.lastAdmitted = new AtomicLong(clock.getAsLong() - intervalNanos);
    }

    /**
     * Whether this warning goes through: {@link #HELD_BACK} if one went through less than an interval ago (it is then
     * counted), else the number held back since the last one that went through.
     */
    public long admit() {
        long now = clock.getAsLong();
        long last = lastAdmitted.get();
        if (now - last >= intervalNanos && lastAdmitted.compareAndSet(last, now)) {
            return heldBack.getAndSet(0);
        }
        heldBack.incrementAndGet();
        return HELD_BACK;
    }

    /** The words a let-through warning ends with: empty when none were held back, else how many and where they went. */
    public static String heldBackSuffix(long heldBack) {
        return heldBack <= 0 ? "" : " (" + heldBack + " more since the last warning, logged at debug)";
    }
}
