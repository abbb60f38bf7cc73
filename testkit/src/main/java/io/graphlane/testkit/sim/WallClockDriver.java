package io.graphlane.testkit.sim;

import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Device time is wall-clock time: one daemon thread per simulated device runs the engine and
 * sleeps in a timed queue until the next item is due, so simulated work burns no CPU and needs
 * no thread of its own. Timer slack (tens of microseconds) delays notifications, never the
 * device schedule: items are due relative to when the previous one was due.
 */
final class WallClockDriver implements DeviceDriver {
    private static final Logger LOG = LoggerFactory.getLogger(WallClockDriver.class);

    private final ScheduledThreadPoolExecutor thread;
    private final long origin = System.nanoTime();

    WallClockDriver(String device) {
        this.thread = new ScheduledThreadPoolExecutor(1, r -> {
            Thread t = new Thread(r, "graphlane-" + device + "-device");
            t.setDaemon(true);
            return t;
        });
        this.thread.setRemoveOnCancelPolicy(true);
    }

    @Override
    public void post(Runnable command) {
        try {
            thread.execute(() -> runGuarded(command));
        } catch (RejectedExecutionException e) {
            // The device has stopped: every lane drained or was lost, so a late decision has nothing left to act on.
            LOG.debug("simulated device already stopped; dropped a late command");
        }
    }

    @Override
    public void scheduleAt(long dueNanos, Runnable event) {
        long delay = dueNanos - nowNanos();
        if (delay <= 0) {
            post(event);
        } else {
            try {
                thread.schedule(() -> runGuarded(event), delay, TimeUnit.NANOSECONDS);
            } catch (RejectedExecutionException e) {
                LOG.debug("simulated device already stopped; dropped a timed event");
            }
        }
    }

    @Override
    public long nowNanos() {
        return System.nanoTime() - origin;
    }

    @Override
    public void close() {
        thread.shutdown();
    }

    private static void runGuarded(Runnable r) {
        try {
            r.run();
        } catch (RuntimeException | Error e) {
            LOG.error("simulated device engine failed", e);
            throw e;
        }
    }
}
