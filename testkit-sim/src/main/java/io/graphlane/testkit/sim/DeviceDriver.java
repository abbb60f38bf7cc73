package io.graphlane.testkit.sim;

/**
 * Runs the simulated device's engine: one thread at a time executes its commands and timed
 * events, so the engine needs no locks. Implementations differ only in what a nanosecond of
 * device time is: a wall-clock nanosecond, or a step the test takes by hand.
 */
interface DeviceDriver {

    /**
     * Names the engine step that runs after every batch of commands and after the timed events due
     * at one instant: batching is what lets a seeded engine reorder work that became ready together.
     */
    void settleWith(Runnable settle);

    /** Runs {@code command} on the device thread after every command posted before it. */
    void post(Runnable command);

    /** Runs {@code event} on the device thread once device time reaches {@code dueNanos}. */
    void scheduleAt(long dueNanos, Runnable event);

    /** The current device time in nanoseconds since the backend started. */
    long nowNanos();

    /** Stops the device thread once the commands already posted have run. */
    void close();
}
