package io.graphlane.testkit.materialize;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.actors.materialize.MaterializationSettings;
import io.graphlane.actors.materialize.MaterializationSupervisor;
import io.graphlane.actors.materialize.UnitFailure;
import io.graphlane.actors.materialize.UnitReply;
import io.graphlane.actors.materialize.WeightRequest;
import io.graphlane.actors.materialize.WeightSource;
import io.graphlane.core.GraphlaneException;
import io.graphlane.core.tensor.DType;
import io.graphlane.core.tensor.TensorSpec;
import io.graphlane.testkit.ledger.LedgerLease;
import io.graphlane.testkit.ledger.RetentionLedger;
import io.graphlane.testkit.materialize.SimParameterBackend.Slot;
import io.graphlane.testkit.sim.SimBackend;
import io.graphlane.testkit.sim.SimExecutor;
import io.graphlane.testkit.sim.SimWork;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Materialization supervisor scenarios on the simulated device, every lease recorded in a retention ledger. */
class MaterializationSupervisorSimTest {
    private static final ActorTestKit KIT = ActorTestKit.create();
    private static final TensorSpec SPEC = TensorSpec.of(DType.F32, 8, 8);
    private static final Duration WAIT = Duration.ofSeconds(5);

    private RetentionLedger ledger;
    private SimBackend sim;
    private SimExecutor loadingLane;
    private SimParameterBackend backend;
    private ActorRef<MaterializationSupervisor.Command<Slot>> supervisor;
    private final List<Slot> slots = new ArrayList<>();

    @AfterAll
    static void shutdownKit() {
        KIT.shutdownTestKit();
    }

    @BeforeEach
    void start() {
        ledger = new RetentionLedger();
        sim = SimBackend.builder().ledger(ledger).build();
        loadingLane = sim.forkExecutors(sim.rootExecutor(), 1).get(0);
        backend = new SimParameterBackend(sim, ledger);
        supervisor = KIT.spawn(MaterializationSupervisor.create(backend, loadingLane, MaterializationSettings.DEFAULTS));
        slots.clear();
    }

    @AfterEach
    void stop() {
        KIT.stop(supervisor);
        if (!sim.isLost()) {
            sim.close();
        }
    }

    private List<WeightRequest<Slot>> unit(String prefix, int n) {
        List<WeightRequest<Slot>> requests = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            String name = prefix + ".w" + i;
            Slot slot = new Slot(name, SPEC);
            slots.add(slot);
            requests.add(new WeightRequest<>(name, slot, WeightSource.of(LedgerLease.zeros(ledger, name, SPEC))));
        }
        return requests;
    }

    private TestProbe<UnitReply> send(String unit, List<WeightRequest<Slot>> requests) {
        TestProbe<UnitReply> probe = KIT.createTestProbe();
        supervisor.tell(new MaterializationSupervisor.MaterializeUnit<>(unit, requests, probe.getRef()));
        return probe;
    }

    private void awaitStarted(String hold) throws Exception {
        sim.whenStarted(hold).toCompletableFuture().get(5, java.util.concurrent.TimeUnit.SECONDS);
    }

    @Test
    void aUnitWithOneFailingMaterializationBindsNothingAndReleasesEveryLeaseOnce() throws Exception {
        TestProbe<UnitReply> probe = send("layer0", unit("layer0", 4));
        awaitStarted("layer0.w0");
        sim.release("layer0.w0");
        sim.fail("layer0.w1", new GraphlaneException("checksum mismatch in layer0.w1"));
        sim.release("layer0.w2");
        sim.release("layer0.w3");

        UnitReply.Failed failed = assertInstanceOf(UnitReply.Failed.class, probe.receiveMessage(WAIT));
        assertEquals(1, failed.failures().size());
        assertEquals("layer0.w1", failed.failures().get(0).parameter());
        assertTrue(failed.describe().contains("checksum mismatch"), failed.describe());
        slots.forEach(s -> assertNull(s.bound, s.name + " bound in a failed unit"));
        assertTrue(ledger.awaitSettled(WAIT));
        ledger.assertClean();
    }

    @Test
    void leasesAreNeverReleasedBeforeTheirCompletionsUnderSimulatedDeviceTime() throws Exception {
        backend.work = name -> SimWork.lasting(Duration.ofMillis(2));
        List<TestProbe<UnitReply>> probes = new ArrayList<>();
        for (int u = 0; u < 6; u++) {
            probes.add(send("layer" + u, unit("layer" + u, 5)));
        }
        for (TestProbe<UnitReply> p : probes) {
            assertInstanceOf(UnitReply.Bound.class, p.receiveMessage(WAIT));
        }
        slots.forEach(s -> assertEquals(s.name, s.bound.name()));
        assertTrue(ledger.awaitSettled(WAIT));
        ledger.assertClean();
        assertEquals(30, ledger.entries().size());
    }

    @Test
    void aLeaseIsHeldWhileItsMaterializationRuns() throws Exception {
        TestProbe<UnitReply> probe = send("layer1", unit("layer1", 2));
        awaitStarted("layer1.w0");
        sim.release("layer1.w0");
        probe.expectNoMessage(Duration.ofMillis(100));
        RetentionLedger.Entry second = ledger.entries().get(1);
        assertEquals(0, second.releaseCount(), "layer1.w1 is still materializing: its lease must be held");
        sim.release("layer1.w1");
        assertInstanceOf(UnitReply.Bound.class, probe.receiveMessage(WAIT));
        assertTrue(ledger.awaitSettled(WAIT));
        ledger.assertClean();
    }

    @Test
    void aCrashingChildLeaksNothing() throws Exception {
        backend.crashOnStart.add("layer2.w2");
        TestProbe<UnitReply> probe = send("layer2", unit("layer2", 4));
        awaitStarted("layer2.w0");
        probe.expectNoMessage(Duration.ofMillis(100));
        assertEquals(0, ledger.entries().get(0).releaseCount(), "in-flight leases wait for their completions, crash or not");
        assertEquals(1, ledger.entries().get(2).releaseCount(), "a lease never handed to the device is released at once");
        assertEquals(1, ledger.entries().get(3).releaseCount());
        sim.release("layer2.w0");
        sim.release("layer2.w1");

        UnitReply.Failed failed = assertInstanceOf(UnitReply.Failed.class, probe.receiveMessage(WAIT));
        assertEquals(UnitFailure.Phase.CRASH, failed.failures().get(0).phase());
        slots.forEach(s -> assertNull(s.bound));
        assertTrue(ledger.awaitSettled(WAIT));
        ledger.assertClean();
    }

    @Test
    void aChildCrashingInBindReleasesEachLeaseExactlyOnce() throws Exception {
        backend.work = name -> SimWork.instant();
        backend.crashOnBind.add("layer3.w1");
        TestProbe<UnitReply> probe = send("layer3", unit("layer3", 3));
        UnitReply.Failed failed = assertInstanceOf(UnitReply.Failed.class, probe.receiveMessage(WAIT));
        assertEquals(UnitFailure.Phase.CRASH, failed.failures().get(0).phase());
        assertTrue(ledger.awaitSettled(WAIT));
        ledger.assertClean();
    }

    @Test
    void aLostDeviceLeaksInFlightLeasesOnPurposeAndReleasesNothingUnderIt() throws Exception {
        TestProbe<UnitReply> probe = send("layer4", unit("layer4", 3));
        awaitStarted("layer4.w0");
        sim.release("layer4.w0");
        RetentionLedger.Entry first = ledger.entries().get(0);
        probe.awaitAssert(() -> {
            assertEquals(1, first.releaseCount());
            return null;
        });
        sim.loseDevice("simulated loss during loading");

        UnitReply.Failed failed = assertInstanceOf(UnitReply.Failed.class, probe.receiveMessage(WAIT));
        assertEquals(2, failed.failures().size(), failed.describe());
        slots.forEach(s -> assertNull(s.bound));
        assertTrue(ledger.awaitSettled(WAIT));
        ledger.assertClean();
        assertEquals(0, ledger.entries().get(1).releaseCount(), "a lease under an unproven completion is never released");
        assertFalse(ledger.entries().get(2).releaseCount() > 0);
    }
}
