package io.graphlane.core.completion;

import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/** Helpers over several completions. */
public final class Completions {
    private Completions() {
    }

    /**
     * Runs {@code action} exactly once, when every one of {@code completions} has ended (successfully
     * or not): on the thread that records the last outcome, or at once if all have ended or the list
     * is empty. Never blocks.
     */
    public static void whenAllDone(List<? extends Completion> completions, Runnable action) {
        if (completions.isEmpty()) {
            action.run();
            return;
        }
        AtomicInteger remaining = new AtomicInteger(completions.size());
        for (Completion c : completions) {
            c.whenDone(outcome -> {
                if (remaining.decrementAndGet() == 0) {
                    action.run();
                }
            });
        }
    }
}
