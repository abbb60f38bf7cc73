package io.graphlane.inference.tensorparallel;

import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The buffers of one planned step of a tensor-parallel stage (one {@link LlamaShard.Step} per shard it covers), freed
 * once when the last of its works lets go of its share. Each work of the step retains one {@link Share}; the lane
 * closes it once, after that work's exact completion, or at once if the work never runs (rejected, poisoned,
 * cancelled); the steps are released when the last share closes, whatever the works' outcomes.
 *
 * @param <T> the backend tensor
 */
final class StepBuffers<T> {
    private final List<LlamaShard<T>> shards;
    private final List<LlamaShard.Step<T>> steps;
    private final AtomicInteger holders;
    private final Counters counters;

    /** Counts over every step of one stage: steps not freed yet, and shares closed more than once. */
    static final class Counters {
        private final AtomicLong stepsHeld = new AtomicLong();
        private final AtomicLong overReleases = new AtomicLong();

        /** Steps whose buffers are not freed yet. */
        long stepsHeld() {
            return stepsHeld.get();
        }

        /** Shares released more than once: always 0 unless retention is broken. */
        long overReleases() {
            return overReleases.get();
        }
    }

    /** The buffers of {@code steps.get(i)} of {@code shards.get(i)}, held by {@code holders} shares, counted in {@code counters}. */
    StepBuffers(List<LlamaShard<T>> shards, List<LlamaShard.Step<T>> steps, int holders, Counters counters) {
        if (shards.size() != steps.size()) {
            throw new IllegalArgumentException(shards.size() + " shards for " + steps.size() + " steps");
        }
        this.shards = shards;
        this.steps = steps;
        this.holders = new AtomicInteger(holders);
        this.counters = counters;
        counters.stepsHeld.incrementAndGet();
    }

    /** One more work's hold; exactly {@code holders} are taken. */
    Share share() {
        return new Share();
    }

    /** One work's hold on the step's buffers; the lane closes it once, after that work's exact completion. */
    final class Share implements AutoCloseable {
        private final AtomicBoolean closed = new AtomicBoolean();

        @Override
        public void close() {
            if (!closed.compareAndSet(false, true)) {
                counters.overReleases.incrementAndGet();
                throw new IllegalStateException("a share of a tensor-parallel step's buffers was released twice");
            }
            if (holders.decrementAndGet() == 0) {
                for (int r = 0; r < steps.size(); r++) {
                    shards.get(r).release(steps.get(r));
                }
                counters.stepsHeld.decrementAndGet();
            }
        }
    }
}
