package io.graphlane.server;

import io.graphlane.core.log.WarningGate;
import java.time.Duration;
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
    private final WarningGate gate;

    /** Warnings to {@code log} at most once per {@code interval}, timed by {@code nanoClock} (such as {@link System#nanoTime}). */
    RateLimitedWarnings(Logger log, Duration interval, LongSupplier nanoClock) {
        this.log = log;
        this.gate = new WarningGate(interval, nanoClock);
    }

    /** Warns {@code message} (with {@code cause}, if not null) unless a warning was logged within the interval. */
    void warn(String message, Throwable cause) {
        long heldBack = gate.admit();
        if (heldBack == WarningGate.HELD_BACK) {
            log.debug(message, cause);
            return;
        }
        String line = message + WarningGate.heldBackSuffix(heldBack);
        if (cause == null) {
            log.warn(line);
        } else {
            log.warn(line, cause);
        }
    }
}
