package io.graphlane.scheduler.pipeline;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * A stage output shared by several holders (the work that fills it, the work that reads it,
 * the engine): each holder releases it once and the output is freed exactly once, after the
 * last holder let go.
 */
final class SharedRelease<A> {
    private final A value;
    private final StageProgram<?, A> program;
    private final AtomicInteger holders;

    private SharedRelease(A value, StageProgram<?, A> program, int holders) {
        this.value = value;
        this.program = program;
        this.holders = new AtomicInteger(holders);
    }

    static <A> SharedRelease<A> of(A value, StageProgram<?, A> program, int holders) {
        return new SharedRelease<>(value, program, holders);
    }

    A value() {
        return value;
    }

    /** One holder lets go; the last one frees the output. */
    void release() {
        int left = holders.decrementAndGet();
        if (left == 0 && value != null) {
            program.release(value);
        } else if (left < 0) {
            throw new IllegalStateException("stage output " + value + " released more often than it was held");
        }
    }

    /** One holder's release as an {@link AutoCloseable} that a lane closes exactly once. */
    AutoCloseable asCloseable() {
        return this::release;
    }
}
