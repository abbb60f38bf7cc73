package io.graphlane.testkit.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.core.completion.Outcome;
import io.graphlane.testkit.ledger.RetentionLedger;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(value = 60, unit = TimeUnit.SECONDS)
class SimBackendTest {

    private static Duration ms(long n) {
        return Duration.ofMillis(n);
    }

    private static Outcome outcome(SimCompletion c) {
        assertTrue(c.isDone(), c.label() + " has not ended");
        return c.outcome().orElseThrow();
    }

    @Test
    void manualTimeMovesOnlyWhenTheTestSaysSo() {
        SimBackend sim = SimBackend.builder().manualTime().recordTimeline().build();
        SimExecutor lane = sim.forkExecutors(sim.rootExecutor(), 1).get(0);
        List<SimCompletion> cs = List.of(sim.submit(lane, SimWork.lasting(ms(2))), sim.submit(lane, SimWork.lasting(ms(2))),
                sim.submit(lane, SimWork.lasting(ms(2))));
        assertTrue(cs.stream().noneMatch(SimCompletion::isDone));
        assertEquals(Duration.ZERO, sim.now());

        sim.advance(ms(3));
        assertTrue(cs.get(0).isDone());
        assertFalse(cs.get(1).isDone());
        assertEquals(ms(3), sim.now());

        assertEquals(ms(6), sim.runUntilIdle());
        assertTrue(cs.stream().allMatch(c -> outcome(c).isSuccess()));
        List<Long> times = sim.timeline().stream().map(SimEvent::deviceNanos).toList();
        assertEquals(List.of(0L, 2_000_000L, 2_000_000L, 4_000_000L, 4_000_000L, 6_000_000L), times);
        assertEquals(ms(6), sim.makespan());
        sim.close();
    }

    /** P stages of 2 ms and M micro-batches, each stage ordered after the previous one: (P + M - 1) · 2 ms. */
    @Test
    void pipelineMakespanIsMeasurableInManualTime() {
        SimBackend sim = SimBackend.builder().manualTime().recordTimeline().build();
        int stages = 3;
        int microBatches = 4;
        List<SimExecutor> lanes = sim.forkExecutors(sim.rootExecutor(), stages);
        SimCompletion last = null;
        for (int m = 0; m < microBatches; m++) {
            SimCompletion previousStage = null;
            for (int s = 0; s < stages; s++) {
                if (previousStage != null) {
                    sim.orderAfter(previousStage, lanes.get(s));
                }
                previousStage = sim.submit(lanes.get(s), SimWork.lasting(ms(2)));
            }
            last = previousStage;
        }
        sim.runUntilIdle();
        assertTrue(outcome(last).isSuccess());
        assertEquals(ms(2L * (stages + microBatches - 1)), sim.makespan());
        sim.close();
    }

    @Test
    void wallClockWorkTakesItsDurationOnOneDeviceThreadWithoutBurningCpu() throws Exception {
        SimBackend sim = SimBackend.builder().name("simcpu").build();
        List<SimExecutor> lanes = sim.forkExecutors(sim.rootExecutor(), 20);
        long start = System.nanoTime();
        List<SimCompletion> cs = new ArrayList<>();
        for (SimExecutor lane : lanes) {
            cs.add(sim.submit(lane, SimWork.lasting(ms(150))));
        }
        for (SimCompletion c : cs) {
            assertTrue(c.await().isSuccess());
        }
        long elapsedMs = (System.nanoTime() - start) / 1_000_000;
        assertTrue(elapsedMs >= 150, "20 lanes of 150 ms ended after " + elapsedMs + " ms");

        List<Thread> deviceThreads = Thread.getAllStackTraces().keySet().stream()
                .filter(t -> t.getName().equals("graphlane-simcpu-device")).toList();
        assertEquals(1, deviceThreads.size(), "one device thread for 20 lanes");
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        if (mx.isThreadCpuTimeSupported() && mx.isThreadCpuTimeEnabled()) {
            long cpuMs = mx.getThreadCpuTime(deviceThreads.get(0).getId()) / 1_000_000;
            assertTrue(cpuMs < 100, "the device thread burned " + cpuMs + " ms of CPU for 150 ms of simulated work");
        }
        sim.close();
    }

    /** Items are due relative to when the previous one was due, so timer slack never accumulates on a lane. */
    @Test
    void wallClockScheduleDoesNotAccumulateTimerSlack() throws Exception {
        SimBackend sim = SimBackend.builder().recordTimeline().build();
        SimExecutor lane = sim.forkExecutors(sim.rootExecutor(), 1).get(0);
        // A hold keeps the lane busy until all 20 items are queued, however slowly this thread submits them.
        SimCompletion gate = sim.submit(lane, SimWork.held("gate"));
        List<SimCompletion> items = new java.util.ArrayList<>();
        for (int i = 0; i < 20; i++) {
            items.add(sim.submit(lane, SimWork.lasting(ms(2))));
        }
        long start = System.nanoTime();
        sim.release("gate");
        assertTrue(items.get(19).await().isSuccess());
        long wallMs = (System.nanoTime() - start) / 1_000_000;
        assertTrue(wallMs >= 40, "20 items of 2 ms ended after " + wallMs + " ms");
        // On the device timeline every item after the first starts exactly when the one before it ended, and each
        // lasts exactly 2 ms (the first starts whenever the device thread saw the release).
        java.util.Map<String, Long> startOf = new java.util.HashMap<>();
        java.util.Map<String, Long> endOf = new java.util.HashMap<>();
        for (SimEvent e : sim.timeline()) {
            (e.kind() == SimEvent.Kind.START ? startOf : endOf).put(e.submission(), e.deviceNanos());
        }
        assertTrue(endOf.containsKey(gate.label()));
        long previousEnd = startOf.get(items.get(0).label());
        for (SimCompletion item : items) {
            assertEquals(previousEnd, (long) startOf.get(item.label()), item.label() + " starts when the previous item ended");
            assertEquals(ms(2).toNanos(), endOf.get(item.label()) - startOf.get(item.label()), item.label() + " lasts 2 ms");
            previousEnd = endOf.get(item.label());
        }
        sim.close();
    }

    @Test
    void heldWorkEndsWhenTheTestReleasesOrFailsIt() {
        SimBackend sim = SimBackend.builder().manualTime().build();
        List<SimExecutor> lanes = sim.forkExecutors(sim.rootExecutor(), 2);
        SimCompletion a = sim.submit(lanes.get(0), SimWork.held("a"));
        SimCompletion b = sim.submit(lanes.get(1), SimWork.held("b"));
        SimCompletion afterA = sim.submit(lanes.get(0), SimWork.instant());
        sim.runUntilIdle();
        assertTrue(sim.isStarted("a"));
        assertTrue(sim.whenStarted("b").toCompletableFuture().isDone());
        assertFalse(a.isDone());
        assertFalse(afterA.isDone());

        assertTrue(sim.release("a"));
        RuntimeException cause = new IllegalStateException("held kernel failed");
        assertTrue(sim.fail("b", cause));
        assertFalse(sim.release("b"), "the first decision of a hold wins");
        sim.runUntilIdle();
        assertTrue(outcome(a).isSuccess());
        assertTrue(outcome(afterA).isSuccess());
        assertSame(cause, assertInstanceOf(Outcome.Failed.class, outcome(b)).cause());
        sim.close();
    }

    @Test
    void aHoldReleasedBeforeItsWorkStartsEndsAtOnce() {
        SimBackend sim = SimBackend.builder().manualTime().build();
        SimExecutor lane = sim.forkExecutors(sim.rootExecutor(), 1).get(0);
        sim.release("early");
        assertFalse(sim.isStarted("early"));
        SimCompletion c = sim.submit(lane, List.of(SimWork.lasting(ms(1)), SimWork.held("early")));
        assertEquals(ms(1), sim.runUntilIdle());
        assertTrue(outcome(c).isSuccess());
        assertTrue(sim.isStarted("early"));
        sim.close();
    }

    @Test
    void aFailingItemStopsItsSubmissionAndSkipsTheRest() {
        SimBackend sim = SimBackend.builder().manualTime().build();
        SimExecutor lane = sim.forkExecutors(sim.rootExecutor(), 1).get(0);
        AtomicInteger reached = new AtomicInteger();
        RuntimeException cause = new IllegalArgumentException("bad input");
        SimCompletion c = sim.submit(lane, List.of(SimWork.calling(reached::incrementAndGet),
                SimWork.failingAfter(ms(1), cause), SimWork.calling(reached::incrementAndGet)));
        assertEquals(ms(1), sim.runUntilIdle());
        assertSame(cause, c.failure().orElseThrow());
        assertEquals(1, reached.get());
        sim.close();
    }

    @Test
    void aSeedReordersIndependentCompletionsReproducibly() {
        Set<List<String>> orders = new HashSet<>();
        for (long seed = 0; seed < 20; seed++) {
            List<String> first = completionOrder(seed);
            assertEquals(first, completionOrder(seed), "seed " + seed + " gave two different orders");
            orders.add(first);
        }
        assertTrue(orders.size() > 5, "20 seeds gave only " + orders.size() + " orders of 12 independent completions");
    }

    private static List<String> completionOrder(long seed) {
        SimBackend sim = SimBackend.builder().manualTime().seed(seed).build();
        List<SimExecutor> lanes = sim.forkExecutors(sim.rootExecutor(), 4);
        List<String> order = new CopyOnWriteArrayList<>();
        for (int i = 0; i < 3; i++) {
            for (SimExecutor lane : lanes) {
                SimCompletion c = sim.submit(lane, SimWork.instant());
                c.whenDone(o -> order.add(c.label()));
            }
        }
        sim.runUntilIdle();
        for (SimExecutor lane : lanes) {
            List<String> ofLane = order.stream().filter(l -> l.startsWith(lane.name() + "#")).toList();
            assertEquals(List.of(lane.name() + "#0", lane.name() + "#1", lane.name() + "#2"), ofLane, "FIFO broken on " + lane);
        }
        sim.close();
        return order.stream().map(l -> l.substring(l.indexOf('/') + 1)).toList();
    }

    @Test
    void aLostDeviceLeaksValuesOfUnprovenWorkAndReportsThem() {
        RetentionLedger ledger = new RetentionLedger();
        SimBackend sim = SimBackend.builder().name("gpu-like").manualTime().ledger(ledger).build();
        List<SimExecutor> lanes = sim.forkExecutors(sim.rootExecutor(), 2);
        AtomicInteger closedPending = new AtomicInteger();
        AtomicInteger closedDone = new AtomicInteger();
        SimCompletion done = sim.submit(lanes.get(0), SimWork.instant());
        sim.retainUntilComplete(lanes.get(0), done, (AutoCloseable) closedDone::incrementAndGet);
        SimCompletion pending = sim.submit(lanes.get(1), SimWork.held("never"));
        AutoCloseable buffer = new AutoCloseable() {
            @Override
            public void close() {
                closedPending.incrementAndGet();
            }

            @Override
            public String toString() {
                return "staging-buffer-3";
            }
        };
        sim.retainUntilComplete(lanes.get(1), pending, buffer);
        sim.runUntilIdle();
        assertEquals(1, closedDone.get());

        sim.loseDevice("Xid 79: fell off the bus");
        assertThrows(SimDeviceLostException.class, () -> sim.submit(lanes.get(0), SimWork.instant()));
        sim.runUntilIdle();

        assertTrue(pending.isUnproven());
        assertFalse(done.isUnproven());
        SimDeviceLostException lost = assertInstanceOf(SimDeviceLostException.class, pending.failure().orElseThrow());
        assertTrue(lost.getMessage().contains(pending.label()), lost.getMessage());
        assertEquals(0, closedPending.get(), "a value of unproven work was freed");
        assertEquals(List.of(new SimBackend.LeakReport("staging-buffer-3", pending.label(),
                "device gpu-like lost before " + pending.label() + " was proven")), sim.leaks());
        ledger.assertClean();
        assertTrue(ledger.entries().stream().anyMatch(RetentionLedger.Entry::isLeaked));
        assertTrue(sim.shutdown().isDone());
    }

    @Test
    void retainedValuesAreRecordedInTheBackendsLedger() {
        RetentionLedger ledger = new RetentionLedger();
        SimBackend sim = SimBackend.builder().manualTime().ledger(ledger).build();
        SimExecutor lane = sim.forkExecutors(sim.rootExecutor(), 1).get(0);
        AtomicInteger closed = new AtomicInteger();
        SimCompletion c = sim.submit(lane, SimWork.lasting(ms(1)));
        sim.retainUntilComplete(lane, c, (AutoCloseable) closed::incrementAndGet);
        sim.retainUntilComplete(lane, c, "a plain value");
        assertEquals(2, ledger.entries().size());
        assertEquals(0, closed.get());
        sim.runUntilIdle();
        assertEquals(1, closed.get());
        ledger.assertClean();
        sim.close();
    }

    @Test
    void manualTimeCannotBeDrivenFromInsideTheDevice() {
        SimBackend sim = SimBackend.builder().manualTime().build();
        SimExecutor lane = sim.forkExecutors(sim.rootExecutor(), 1).get(0);
        SimCompletion c = sim.submit(lane, SimWork.calling(sim::runUntilIdle));
        sim.runUntilIdle();
        IllegalStateException refused = assertInstanceOf(IllegalStateException.class, c.failure().orElseThrow());
        assertTrue(refused.getMessage().contains("from inside the simulated device"), refused.getMessage());
        sim.close();
    }

    @Test
    void wallClockTimeRefusesManualSteps() {
        SimBackend sim = SimBackend.create();
        IllegalStateException refused = assertThrows(IllegalStateException.class, () -> sim.advance(ms(1)));
        assertTrue(refused.getMessage().contains("manualTime()"), refused.getMessage());
        sim.close();
    }

    @Test
    void closingAManualDeviceWithHeldWorkNamesTheBusyLane() {
        SimBackend sim = SimBackend.builder().name("stuck").manualTime().build();
        SimExecutor lane = sim.forkExecutors(sim.rootExecutor(), 1).get(0);
        sim.submit(lane, SimWork.held("forgotten"));
        IllegalStateException refused = assertThrows(IllegalStateException.class, sim::close);
        assertTrue(refused.getMessage().contains(lane.name()), refused.getMessage());
        sim.release("forgotten");
        sim.runUntilIdle();
        assertTrue(sim.shutdown().isDone());
    }

    @Test
    void jitterNeedsASeed() {
        IllegalStateException refused = assertThrows(IllegalStateException.class, () -> SimBackend.builder().jitter(ms(1)).build());
        assertTrue(refused.getMessage().contains("seed"), refused.getMessage());
    }
}
