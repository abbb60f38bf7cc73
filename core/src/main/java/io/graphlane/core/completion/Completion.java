package io.graphlane.core.completion;

import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Consumer;

/**
 * The exact completion of one submission: it covers the work of that submission and
 * nothing else. Waiting on it never drains or synchronizes unrelated work. Forgetting
 * a completion never cancels or frees the work it covers.
 */
public interface Completion {

    /** True once the covered work has ended, successfully or not; never blocks and never reverts to false. */
    boolean isDone();

    /** The recorded outcome, empty while the work is still running; once present it never changes. */
    Optional<Outcome> outcome();

    /**
     * Blocks the calling thread until the covered work ends and returns its outcome. May be
     * called any number of times from any number of threads and always returns the same
     * outcome. Never call this inside an actor: use {@link #whenDone} and a message.
     */
    Outcome await() throws InterruptedException;

    /**
     * Runs {@code callback} exactly once with the outcome when the work ends: at once on the
     * calling thread if it already has, otherwise on the thread that records the outcome.
     * Callbacks must be short and must not block.
     */
    void whenDone(Consumer<Outcome> callback);

    /** A short name of this submission for errors and traces, such as {@code cpu0/lane-2#17}. */
    String label();

    /** Waits like {@link #await()} and throws {@link CompletionFailedException} if the work failed. */
    default void awaitSuccess() throws InterruptedException {
        if (await() instanceof Outcome.Failed failed) {
            throw CompletionFailedException.of(this, failed.cause());
        }
    }

    /** A stage that completes when the work ends: normally on success, exceptionally with the same cause on failure. */
    default CompletionStage<Void> toStage() {
        CompletableFuture<Void> future = new CompletableFuture<>();
        whenDone(o -> {
            if (o instanceof Outcome.Failed failed) {
                future.completeExceptionally(failed.cause());
            } else {
                future.complete(null);
            }
        });
        return future;
    }

    /** The failure cause once the work has failed; empty while running and after success. */
    default Optional<Throwable> failure() {
        return outcome().flatMap(o -> o instanceof Outcome.Failed f ? Optional.of(f.cause()) : Optional.empty());
    }
}
