package io.graphlane.scheduler.lane;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;

/** A retained value that counts its releases and notes whether its work had ended when it was released. */
public final class Tracked implements AutoCloseable {
    private final AtomicInteger closes = new AtomicInteger();
    private final CountDownLatch closed = new CountDownLatch(1);
    private final BooleanSupplier workEnded;
    private volatile boolean releasedBeforeEnd;

    public Tracked(BooleanSupplier workEnded) {
        this.workEnded = workEnded;
    }

    /** A value whose work is {@code gate}: its release must come after the gate's work ended. */
    public static Tracked heldBy(Gate gate) {
        return new Tracked(() -> gate.endTick >= 0 || !gate.ran());
    }

    @Override
    public void close() {
        if (!workEnded.getAsBoolean()) {
            releasedBeforeEnd = true;
        }
        closes.incrementAndGet();
        closed.countDown();
    }

    public int closes() {
        return closes.get();
    }

    public boolean releasedBeforeEnd() {
        return releasedBeforeEnd;
    }

    public boolean awaitClosed() throws InterruptedException {
        return closed.await(10, TimeUnit.SECONDS);
    }
}
