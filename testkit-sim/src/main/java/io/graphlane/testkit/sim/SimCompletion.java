package io.graphlane.testkit.sim;

import io.graphlane.core.completion.Completion;
import io.graphlane.core.completion.Outcome;
import io.graphlane.core.completion.SettableCompletion;
import java.util.Optional;
import java.util.function.Consumer;

/**
 * The exact completion of one simulated submission. Only the simulated device records it,
 * so a test cannot complete it by accident: it decides held work through
 * {@link SimBackend#release(String)} and {@link SimBackend#fail(String, Throwable)} instead.
 */
public final class SimCompletion implements Completion {
    private final SimBackend device;
    private final SettableCompletion state;
    /** The outcome as the device engine sees it; set before the public record so dependents never wait on callbacks. */
    private volatile Outcome deviceOutcome;
    /** The device time at which the work ended (or is due to end), in nanoseconds. */
    private volatile long endNanos;
    private volatile boolean unproven;

    SimCompletion(SimBackend device, String label) {
        this.device = device;
        this.state = new SettableCompletion(label);
    }

    /** True if this completion ended only because its device was lost: its work was never proven to have ended. */
    public boolean isUnproven() {
        return unproven;
    }

    @Override
    public boolean isDone() {
        return state.isDone();
    }

    @Override
    public Optional<Outcome> outcome() {
        return state.outcome();
    }

    @Override
    public Outcome await() throws InterruptedException {
        return state.await();
    }

    @Override
    public void whenDone(Consumer<Outcome> callback) {
        state.whenDone(callback);
    }

    @Override
    public String label() {
        return state.label();
    }

    @Override
    public String toString() {
        return state.toString() + (unproven ? " unproven" : "");
    }

    SimBackend device() {
        return device;
    }

    Outcome deviceOutcome() {
        return deviceOutcome;
    }

    long endNanos() {
        return endNanos;
    }

    /** Records the device's outcome: first the engine's view, then the public one (which runs callbacks). */
    void end(Outcome outcome, long atNanos, boolean proven) {
        endNanos = atNanos;
        unproven = !proven;
        deviceOutcome = outcome;
        state.record(outcome);
    }

    /** Marks the engine's view of the end before several completions are published together. */
    void endQuietly(Outcome outcome, long atNanos, boolean proven) {
        endNanos = atNanos;
        unproven = !proven;
        deviceOutcome = outcome;
    }

    /** Publishes an outcome marked by {@link #endQuietly}. */
    void publish() {
        state.record(deviceOutcome);
    }
}
