package io.graphlane.scheduler.pipeline;

import java.util.Objects;

/** One stage's planned work for one micro-batch and the output it will fill. */
public record StageStep<W, A>(W work, A output) {
    public StageStep {
        Objects.requireNonNull(work, "work");
        Objects.requireNonNull(output, "output");
    }
}
