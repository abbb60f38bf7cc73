package io.graphlane.testkit.sim;

import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
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
    private final ConcurrentLinkedQueue<Runnable> commands = new ConcurrentLinkedQueue<>();
    private final AtomicBoolean drainScheduled = new AtomicBoolean();
    private final Runnable drain = this::drain;
    private volatile Runnable settle = () -> { };

    WallClockDriver(String device) {
        this.thread = new ScheduledThreadPoolExecutor(1, r -> {
            Thread t = new Thread(r, "graphlane-" + device + "-device");
            t.setDaemon(true);
            return t;
        });
        this.thread.setRemoveOnCancelPolicy(true);
    }

    @Override
    public void settleWith(Runnable engineStep) {
        this.settle = engineStep;
    }

    @Override
    public void post(Runnable command) {
        commands.add(command);
        if (!drainScheduled.compareAndSet(false, true)) {
            return; // a drain is already on its way and will see this command
        }
        try {
            thread.execute(drain);
        } catch (RejectedExecutionException e) {
            // The device has stopped: every lane drained or was lost, so a late decision has nothing left to act on.
            LOG.debug("simulated device already stopped; dropped a late command");
        }
    }

    @Override
    public void scheduleAt(long dueNanos, Runnable event) {
        long delay = dueNanos - nowNanos();
        Runnable step = () -> {
            event.run();
            settle.run();
        };
        if (delay <= 0) {
            post(step);
        } else {
            try {
                thread.schedule(() -> runGuarded(step), delay, TimeUnit.NANOSECONDS);
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

    /** Runs every command posted so far as one batch, then the engine step. */
    private void drain() {
        drainScheduled.set(false);
        runGuarded(() -> {
            Runnable c;
            while ((c = commands.poll()) != null) {
                c.run();
            }
            settle.run();
        });
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
