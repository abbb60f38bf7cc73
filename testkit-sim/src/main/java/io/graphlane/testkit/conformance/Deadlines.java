package io.graphlane.testkit.conformance;

import static org.junit.jupiter.api.Assertions.fail;

import io.graphlane.core.completion.Completion;
import io.graphlane.core.completion.Outcome;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/** Waits with a deadline for the conformance suites: a wait that runs out fails the test, naming what never ended. */
final class Deadlines {
    private Deadlines() {
    }

    /** The outcome of {@code c} once it ends, or a failed test after {@code timeout}. */
    static Outcome awaitOutcome(Completion c, Duration timeout) {
        CompletableFuture<Outcome> ended = new CompletableFuture<>();
        c.whenDone(ended::complete);
        return get(ended, timeout, c.label(), "the backend is hung or lost the work");
    }

    /**
     * The value of {@code future} once it completes, or a failed test after {@code timeout} ({@code what} and
     * {@code meaning} say what did not end and what that means) or if it completed exceptionally.
     */
    static <T> T get(Future<T> future, Duration timeout, String what, String meaning) {
        try {
            return future.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            return fail(what + " did not end within " + timeout + ": " + meaning);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return fail("interrupted while waiting for " + what);
        } catch (ExecutionException e) {
            return fail(what + " failed", e.getCause());
        }
    }
}
