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
final class Gate implements CpuWork {
    static final AtomicLong TICKS = new AtomicLong();

    private final String name;
    private final CountDownLatch open = new CountDownLatch(1);
    private final CountDownLatch started = new CountDownLatch(1);
    private final AtomicBoolean ran = new AtomicBoolean();
    private volatile boolean fail;
    volatile long startTick = -1;
    volatile long endTick = -1;

    Gate(String name) {
        this.name = name;
    }

    /** Work that is already open: runs at once when its turn comes. */
    static Gate open(String name) {
        Gate g = new Gate(name);
        g.open();
        return g;
    }

    /** Work that fails with a RuntimeException naming it as soon as it runs. */
    static Gate failing(String name) {
        Gate g = new Gate(name);
        g.fail = true;
        g.open();
        return g;
    }

    void open() {
        open.countDown();
    }

    void openFailing() {
        fail = true;
        open.countDown();
    }

    boolean awaitStarted() throws InterruptedException {
        return started.await(10, TimeUnit.SECONDS);
    }

    boolean hasStarted() {
        return started.getCount() == 0;
    }

    boolean ran() {
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
