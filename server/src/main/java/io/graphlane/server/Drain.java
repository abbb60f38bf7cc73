package io.graphlane.server;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The completions a server is answering, and its drain: once draining, new completions are refused (503) and
 * {@link #drain} completes when the last one in flight has ended or the grace period is over. Thread-safe.
 */
final class Drain {
    private final AtomicInteger inFlight = new AtomicInteger();
    private final CompletableFuture<Void> idle = new CompletableFuture<>();
    private volatile boolean draining;

    /** A completion in flight: {@link Ticket#close()} once its response ended (idempotent). */
    interface Ticket {
        void close();
    }

    boolean draining() {
        return draining;
    }

    int inFlight() {
        return inFlight.get();
    }

    /** Counts one completion in flight, or returns null when draining (it is to be refused). */
    Ticket tryEnter() {
        inFlight.incrementAndGet();
        AtomicBoolean closed = new AtomicBoolean();
        Ticket ticket = () -> {
            if (closed.compareAndSet(false, true) && inFlight.decrementAndGet() == 0 && draining) {
                idle.complete(null);
            }
        };
        // Counted before the check, so that a drain that starts now either is seen here or waits for this one.
        if (draining) {
            ticket.close();
            return null;
        }
        return ticket;
    }

    /** Stops admitting; completes with true once nothing is in flight, or false when {@code grace} ran out first. */
    CompletionStage<Boolean> drain(Duration grace) {
        draining = true;
        if (inFlight.get() == 0) {
            idle.complete(null);
        }
        return idle.thenApply(v -> true).toCompletableFuture().completeOnTimeout(false, grace.toMillis(), TimeUnit.MILLISECONDS);
    }
}
