package io.graphlane.server;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import org.slf4j.Logger;

/**
 * Warnings about what clients send, at most one per interval: the first at once, those within the interval after it
 * at debug only, counted in the next warning. A client that sends one malformed request after another thus adds a
 * line per interval to the log, not one per request. Thread-safe.
 */
final class RateLimitedWarnings {
    /** Ten seconds between warnings. */
    static final Duration DEFAULT_INTERVAL = Duration.ofSeconds(10);

    private final Logger log;
    private final long intervalNanos;
    private final LongSupplier nanoClock;
    private final AtomicLong lastWarning;
    private final AtomicInteger suppressed = new AtomicInteger();

    /** Warnings to {@code log} at most once per {@code interval}, timed by {@code nanoClock} (such as {@link System#nanoTime}). */
    RateLimitedWarnings(Logger log, Duration interval, LongSupplier nanoClock) {
        this.log = log;
        this.intervalNanos = interval.toNanos();
        this.nanoClock = nanoClock;
        this.lastWarning = new AtomicLong(nanoClock.getAsLong() - intervalNanos);
    }

    /** Warns {@code message} (with {@code cause}, if not null) unless a warning was logged within the interval. */
    void warn(String message, Throwable cause) {
        long now = nanoClock.getAsLong();
        long last = lastWarning.get();
        if (now - last >= intervalNanos && lastWarning.compareAndSet(last, now)) {
            int since = suppressed.getAndSet(0);
            String line = since == 0 ? message : message + " (and " + since + " more like it since the last warning, logged at debug)";
            if (cause == null) {
                log.warn(line);
            } else {
                log.warn(line, cause);
            }
        } else {
            suppressed.incrementAndGet();
            log.debug(message, cause);
        }
    }
}
