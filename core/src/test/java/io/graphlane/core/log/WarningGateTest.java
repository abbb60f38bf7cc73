package io.graphlane.core.log;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class WarningGateTest {

    @Test
    void letsOneThroughPerIntervalAndCountsTheRest() {
        AtomicLong now = new AtomicLong(1_000);
        WarningGate gate = new WarningGate(Duration.ofSeconds(10), now::get);
        assertEquals(0, gate.admit(), "the first warning goes through at once");
        for (int i = 0; i < 5; i++) {
            assertEquals(WarningGate.HELD_BACK, gate.admit());
        }
        now.addAndGet(Duration.ofSeconds(10).toNanos() - 1);
        assertEquals(WarningGate.HELD_BACK, gate.admit(), "one nanosecond short of the interval");
        now.addAndGet(1);
        assertEquals(6, gate.admit(), "the next one names the six held back");
        assertEquals(WarningGate.HELD_BACK, gate.admit());
    }

    @Test
    void concurrentCallersLetExactlyOneThrough() throws Exception {
        AtomicLong now = new AtomicLong();
        WarningGate gate = new WarningGate(Duration.ofSeconds(1), now::get);
        gate.admit();
        now.addAndGet(Duration.ofSeconds(1).toNanos());
        int threads = 8;
        int each = 1_000;
        AtomicLong through = new AtomicLong();
        CountDownLatch start = new CountDownLatch(1);
        Thread[] workers = new Thread[threads];
        for (int t = 0; t < threads; t++) {
            workers[t] = new Thread(() -> {
                try {
                    start.await();
                } catch (InterruptedException e) {
                    return;
                }
                for (int i = 0; i < each; i++) {
                    if (gate.admit() != WarningGate.HELD_BACK) {
                        through.incrementAndGet();
                    }
                }
            });
            workers[t].start();
        }
        start.countDown();
        for (Thread w : workers) {
            w.join();
        }
        assertEquals(1, through.get());
        now.addAndGet(Duration.ofSeconds(1).toNanos());
        assertEquals(threads * each - 1, gate.admit(), "every call but the one let through was counted");
    }

    @Test
    void suffixNamesTheCountOnlyWhenThereIsOne() {
        assertEquals("", WarningGate.heldBackSuffix(0));
        assertEquals(" (3 more since the last warning, logged at debug)", WarningGate.heldBackSuffix(3));
    }

    @Test
    void refusesANonPositiveInterval() {
        assertThrows(IllegalArgumentException.class, () -> new WarningGate(Duration.ZERO));
    }
}
