package io.graphlane.testkit.sim;

import java.time.Duration;
import java.util.Objects;

/**
 * One item of simulated device work. It occupies its lane for a span of simulated device
 * time without burning a CPU core: the simulated device only schedules the moment the item
 * ends. A submission runs its items in order; the first failing item fails the submission.
 */
public sealed interface SimWork permits SimWork.Instant, SimWork.Lasting, SimWork.Failing, SimWork.Held, SimWork.Calling,
        SimWork.CallingFor {

    /** Work that ends as soon as it starts. */
    SimWork NOOP = new Instant();

    /** Work that ends as soon as it starts. */
    static SimWork instant() {
        return NOOP;
    }

    /** Work that occupies its lane for {@code duration} of device time, then succeeds. */
    static SimWork lasting(Duration duration) {
        return new Lasting(duration);
    }

    /** Work that fails with {@code cause} as soon as it starts. */
    static SimWork failing(Throwable cause) {
        return new Failing(Duration.ZERO, cause);
    }

    /** Work that occupies its lane for {@code duration}, then fails with {@code cause}. */
    static SimWork failingAfter(Duration duration, Throwable cause) {
        return new Failing(duration, cause);
    }

    /**
     * Work that starts and then holds its lane until the test calls {@link SimBackend#release(String)}
     * (it succeeds) or {@link SimBackend#fail(String, Throwable)} (it fails) with the same name. A hold
     * decided before the work starts lets it end as soon as it starts.
     */
    static SimWork held(String name) {
        return new Held(name);
    }

    /**
     * Work that runs {@code action} on the device thread when the lane reaches it, then ends; an
     * exception thrown by the action fails the submission. The action must be short and must not block.
     */
    static SimWork calling(Runnable action) {
        return new Calling(action);
    }

    /**
     * Work that runs {@code action} on the device thread when the lane reaches it, then occupies the lane for
     * {@code duration}; an exception thrown by the action fails the submission when the duration has passed. The action
     * must be short and must not block.
     */
    static SimWork callingFor(Runnable action, Duration duration) {
        return new CallingFor(action, duration);
    }

    /** Ends at once. */
    record Instant() implements SimWork { }

    /** Lasts {@code duration} of device time. */
    record Lasting(Duration duration) implements SimWork {
        public Lasting {
            requireNonNegative(duration);
        }
    }

    /** Lasts {@code duration}, then fails with {@code cause}. */
    record Failing(Duration duration, Throwable cause) implements SimWork {
        public Failing {
            requireNonNegative(duration);
            Objects.requireNonNull(cause, "cause");
        }
    }

    /** Holds the lane until the hold {@code name} is released or failed. */
    record Held(String name) implements SimWork {
        public Held {
            Objects.requireNonNull(name, "hold name");
        }
    }

    /** Runs {@code action} on the device thread when reached. */
    record Calling(Runnable action) implements SimWork {
        public Calling {
            Objects.requireNonNull(action, "action");
        }
    }

    /** Runs {@code action} when reached, then lasts {@code duration}. */
    record CallingFor(Runnable action, Duration duration) implements SimWork {
        public CallingFor {
            Objects.requireNonNull(action, "action");
            requireNonNegative(duration);
        }
    }

    private static void requireNonNegative(Duration duration) {
        Objects.requireNonNull(duration, "duration");
        if (duration.isNegative()) {
            throw new IllegalArgumentException("simulated work duration must be >= 0, got " + duration);
        }
    }
}
