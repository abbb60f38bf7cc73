package io.graphlane.core.completion;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.function.Consumer;

/**
 * A completion whose outcome is recorded once by its owner (a backend's worker, a
 * simulated device, a test). Thread-safe; the first record wins and later attempts
 * report {@code false}. Backends build their completion types on it.
 */
public class SettableCompletion implements Completion {
    private static final System.Logger LOG = System.getLogger(SettableCompletion.class.getName());

    private final String label;
    private final CountDownLatch done = new CountDownLatch(1);
    private volatile Outcome outcome;
    private List<Consumer<Outcome>> callbacks = new ArrayList<>(2);

    public SettableCompletion(String label) {
        this.label = Objects.requireNonNull(label, "label");
    }

    /** An already successful completion, for an empty submission or values that are already available. */
    public static SettableCompletion succeeded(String label) {
        SettableCompletion c = new SettableCompletion(label);
        c.succeed();
        return c;
    }

    /** An already failed completion. */
    public static SettableCompletion failed(String label, Throwable cause) {
        SettableCompletion c = new SettableCompletion(label);
        c.fail(cause);
        return c;
    }

    /** Records success; false if an outcome was already recorded (the first one stays). */
    public boolean succeed() {
        return record(Outcome.SUCCESS);
    }

    /** Records failure with {@code cause}; false if an outcome was already recorded (the first one stays). */
    public boolean fail(Throwable cause) {
        return record(Outcome.failure(Objects.requireNonNull(cause, "cause")));
    }

    /** Records {@code result}; false if an outcome was already recorded. */
    public boolean record(Outcome result) {
        List<Consumer<Outcome>> toRun;
        synchronized (this) {
            if (outcome != null) {
                return false;
            }
            outcome = result;
            toRun = callbacks;
            callbacks = null;
        }
        done.countDown();
        for (Consumer<Outcome> callback : toRun) {
            runCallback(callback, result);
        }
        return true;
    }

    @Override
    public boolean isDone() {
        return outcome != null;
    }

    @Override
    public Optional<Outcome> outcome() {
        return Optional.ofNullable(outcome);
    }

    @Override
    public Outcome await() throws InterruptedException {
        done.await();
        return outcome;
    }

    /** Waits without reacting to interrupts: for device-side waits on a backend's own worker thread. */
    public Outcome awaitUninterruptibly() {
        boolean interrupted = false;
        while (true) {
            try {
                done.await();
                break;
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
        return outcome;
    }

    @Override
    public void whenDone(Consumer<Outcome> callback) {
        Objects.requireNonNull(callback, "callback");
        Outcome now;
        synchronized (this) {
            now = outcome;
            if (now == null) {
                callbacks.add(callback);
                return;
            }
        }
        runCallback(callback, now);
    }

    @Override
    public String label() {
        return label;
    }

    @Override
    public String toString() {
        Outcome o = outcome;
        return label + (o == null ? " (running)" : " (" + o + ")");
    }

    private void runCallback(Consumer<Outcome> callback, Outcome result) {
        try {
            callback.accept(result);
        } catch (RuntimeException | Error e) {
            // A callback's failure must not stop the others nor the thread that recorded the outcome.
            LOG.log(System.Logger.Level.ERROR, "completion callback of " + label + " threw", e);
        }
    }
}
