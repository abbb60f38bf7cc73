package io.graphlane.scheduler.lane;

import io.graphlane.backend.cpu.CpuWork;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * CPU work the test controls: it signals when it starts, then waits (on the lane's worker
 * thread, never on an actor) until the test opens it, then succeeds or throws. Records a global
 * tick at its start and end so tests can check the order of work on different lanes.
 */
public final class Gate implements CpuWork {
    public static final AtomicLong TICKS = new AtomicLong();

    private final String name;
    private final CountDownLatch open = new CountDownLatch(1);
    private final CountDownLatch started = new CountDownLatch(1);
    private final AtomicBoolean ran = new AtomicBoolean();
    private volatile boolean fail;
    public volatile long startTick = -1;
    public volatile long endTick = -1;

    public Gate(String name) {
        this.name = name;
    }

    /** Work that is already open: runs at once when its turn comes. */
    public static Gate open(String name) {
        Gate g = new Gate(name);
        g.open();
        return g;
    }

    /** Work that fails with a RuntimeException naming it as soon as it runs. */
    public static Gate failing(String name) {
        Gate g = new Gate(name);
        g.fail = true;
        g.open();
        return g;
    }

    public void open() {
        open.countDown();
    }

    public void openFailing() {
        fail = true;
        open.countDown();
    }

    public boolean awaitStarted() throws InterruptedException {
        return started.await(10, TimeUnit.SECONDS);
    }

    public boolean hasStarted() {
        return started.getCount() == 0;
    }

    public boolean ran() {
        return ran.get();
    }

    @Override
    public void run() throws Exception {
        startTick = TICKS.incrementAndGet();
        ran.set(true);
        started.countDown();
        if (!open.await(30, TimeUnit.SECONDS)) {
            throw new IllegalStateException("gate " + name + " was never opened");
        }
        endTick = TICKS.incrementAndGet();
        if (fail) {
            throw new IllegalStateException("work " + name + " failed on purpose");
        }
    }

    @Override
    public String toString() {
        return "gate " + name;
    }
}
