package io.graphlane.core.completion;

import java.util.Objects;

/** How one submission ended: it either succeeded or failed with a cause. */
public sealed interface Outcome permits Outcome.Succeeded, Outcome.Failed {

    /** The one success value. */
    Succeeded SUCCESS = new Succeeded();

    static Outcome success() {
        return SUCCESS;
    }

    static Outcome failure(Throwable cause) {
        return new Failed(cause);
    }

    default boolean isSuccess() {
        return this instanceof Succeeded;
    }

    /** The work finished and its results may be read. */
    record Succeeded() implements Outcome {
        @Override
        public String toString() {
            return "succeeded";
        }
    }

    /** The work failed (or never ran); {@code cause} says why, for good. */
    record Failed(Throwable cause) implements Outcome {
        public Failed {
            Objects.requireNonNull(cause, "cause");
        }

        @Override
        public String toString() {
            return "failed: " + cause.getMessage();
        }
    }
}
