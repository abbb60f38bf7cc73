package io.graphlane.scheduler.lane;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.actors.lane.LaneActor;
import io.graphlane.actors.lane.LaneProtocol;
import io.graphlane.actors.lane.LaneProtocol.Resolved;
import io.graphlane.actors.lane.LaneProtocol.Submit;
import io.graphlane.actors.lane.LaneProtocol.Submitted;
import io.graphlane.actors.lane.LaneProtocol.Subscribe;
import io.graphlane.actors.lane.LaneRegistry;
import io.graphlane.actors.lane.LaneSettings;
import io.graphlane.actors.lane.LaneStoppedException;
import io.graphlane.actors.lane.LocalLaneRegistry;
import io.graphlane.core.backend.ExecutorClosedException;
import io.graphlane.core.completion.Outcome;
import io.graphlane.core.graph.CompletionHandle;
import io.graphlane.core.graph.LaneId;
import io.graphlane.testkit.ledger.RetentionLedger;
import io.graphlane.testkit.sim.SimBackend;
import io.graphlane.testkit.sim.SimExecutor;
import io.graphlane.testkit.sim.SimWork;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A lane actor that stops for any reason, holding in-flight, queued and waiting work and waiting
 * subscribers, leaks nothing and releases nothing early (simulated device, retention ledger).
 */
class LaneActorStopTest {
    private static final ActorTestKit KIT = ActorTestKit.create();
    private static final LaneId LANE = LaneId.of("lane");
    /** A lane whose lookup fails as no registry should: the lane actor crashes on it. */
    private static final LaneId BROKEN = LaneId.of("broken");
    private static final String IN_FLIGHT = "in flight";

    /** How the lane actor ends. */
    enum Ending { CRASH, STOPPED_BY_PARENT }

    private RetentionLedger ledger;
    private SimBackend backend;
    private Inbox inbox;
    private long sequence;

    @AfterAll
    static void shutdownKit() {
        KIT.shutdownTestKit();
    }

    @BeforeEach
    void fresh() {
        ledger = new RetentionLedger();
        backend = SimBackend.builder().ledger(ledger).build();
        inbox = new Inbox(KIT);
    }

    @AfterEach
    void closeBackend() {
        backend.release(IN_FLIGHT); // if the test failed before it did: close waits for every lane to drain
        backend.close();
    }

    private CompletionHandle handle() {
        return CompletionHandle.local(LANE, sequence++);
    }

    @ParameterizedTest
    @EnumSource(Ending.class)
    void aLaneThatStopsReleasesQueuedValuesAtOnceKeepsInFlightOnesUntilTheirCompletionAndAnswersEveryWaiter(Ending ending)
            throws Exception {
        SimExecutor executor = backend.forkExecutors(backend.rootExecutor(), 1).get(0);
        LocalLaneRegistry lanes = new LocalLaneRegistry();
        LaneRegistry registry = new CrashingRegistry(lanes);
        LaneSettings settings = LaneSettings.fromConfig(KIT.system().settings().config()).withLimits(1, 8);
        ActorRef<LaneProtocol.Command> lane = KIT.spawn(LaneActor.create(
                new LaneActor.Spec<>(LANE, backend, executor, registry, settings, null, null)));
        lanes.register(LANE, lane);

        // In flight: holds the lane's one slot until the test releases it.
        CompletionHandle inFlight = handle();
        RetentionLedger.Entry inFlightValue = ledger.acquire("in-flight value");
        lane.tell(Submit.of(inFlight, SimWork.held(IN_FLIGHT), inbox.ref()).retaining(inFlightValue));
        inbox.expect(Submitted.class, inFlight);
        backend.whenStarted(IN_FLIGHT).toCompletableFuture().get(10, TimeUnit.SECONDS);

        // Queued behind it (ready), and waiting for a same-lane producer that has not arrived.
        CompletionHandle queued = handle();
        RetentionLedger.Entry queuedValue = ledger.acquire("queued value");
        lane.tell(Submit.<SimWork>of(queued, SimWork.instant(), inbox.ref()).retaining(queuedValue));
        CompletionHandle notArrived = handle();
        CompletionHandle waiting = handle();
        RetentionLedger.Entry waitingValue = ledger.acquire("waiting value");
        lane.tell(Submit.<SimWork>of(waiting, SimWork.instant(), inbox.ref()).after(notArrived).retaining(waitingValue));

        // Subscribers waiting: on queued work, and on a handle the lane has not seen yet.
        TestProbe<Resolved> subscriber = KIT.createTestProbe(Resolved.class);
        lane.tell(new Subscribe(queued, LaneProtocol.NO_SCOPE, subscriber.ref()));
        lane.tell(new Subscribe(notArrived, LaneProtocol.NO_SCOPE, subscriber.ref()));

        List<RetentionLedger.Entry> unsubmittedValues = List.of(queuedValue, waitingValue);
        List<CompletionHandle> unsubmitted = List.of(queued, waiting);
        if (ending == Ending.CRASH) {
            CompletionHandle crashing = handle();
            RetentionLedger.Entry crashingValue = ledger.acquire("value of the crashing submission");
            lane.tell(Submit.<SimWork>of(crashing, SimWork.instant(), inbox.ref())
                    .after(CompletionHandle.local(BROKEN, 0)).retaining(crashingValue));
            unsubmittedValues = List.of(queuedValue, waitingValue, crashingValue);
            unsubmitted = List.of(queued, waiting, crashing);
        } else {
            // A stop by the parent is a system message: it overtakes what waits in the lane's mailbox, whose rest then
            // goes to dead letters. The status reply comes after every message sent before it, so once it is here the
            // submissions and subscriptions above are the lane's, and the stop finds them all.
            TestProbe<LaneProtocol.LaneStatus> status = KIT.createTestProbe(LaneProtocol.LaneStatus.class);
            lane.tell(new LaneProtocol.GetStatus(status.ref()));
            status.receiveMessage(Duration.ofSeconds(10));
            KIT.stop(lane, Duration.ofSeconds(10));
        }
        subscriber.expectTerminated(lane, Duration.ofSeconds(10));

        // Work never submitted ended failed and its values were released, once, at once.
        for (CompletionHandle h : unsubmitted) {
            inbox.expectFailure(h, LaneStoppedException.class);
        }
        for (RetentionLedger.Entry v : unsubmittedValues) {
            assertEquals(1, v.releaseCount(), v.name() + " releases after the lane stopped");
        }
        // Every waiting subscriber was told its handle ended.
        Set<CompletionHandle> told = new HashSet<>();
        for (int i = 0; i < 2; i++) {
            Resolved r = subscriber.receiveMessage(Duration.ofSeconds(10));
            LaneProtocol.Ended ended = assertInstanceOf(LaneProtocol.Ended.class, r.resolution(), r.toString());
            Outcome.Failed failed = assertInstanceOf(Outcome.Failed.class, ended.outcome());
            assertInstanceOf(LaneStoppedException.class, failed.cause());
            told.add(r.handle());
        }
        assertEquals(Set.of(queued, notArrived), told);
        // The executor was shut down: it refuses new work.
        assertThrows(ExecutorClosedException.class, () -> backend.submit(executor, SimWork.instant()));

        // The in-flight value stays with the backend until its exact completion; its submitter still hears.
        assertEquals(0, inFlightValue.releaseCount(), "in-flight value released before its completion");
        assertTrue(backend.release(IN_FLIGHT));
        inbox.expectSuccess(inFlight);
        assertTrue(ledger.awaitSettled(Duration.ofSeconds(10)), ledger.toString());
        assertEquals(1, inFlightValue.releaseCount());
        ledger.assertClean();
    }

    /** Finds lanes in {@code lanes}; looking up {@link #BROKEN} throws, which no lane actor catches. */
    private record CrashingRegistry(LocalLaneRegistry found) implements LaneRegistry {
        @Override
        public ActorRef<LaneProtocol.Command> lane(LaneId lane) {
            if (lane.equals(BROKEN)) {
                throw new IllegalStateException("registry fault looking up " + lane);
            }
            return found.lane(lane);
        }

        @Override
        public Set<LaneId> lanes() {
            return found.lanes();
        }

        @Override
        public long reserveSequences(int count) {
            return found.reserveSequences(count);
        }

        @Override
        public long newScope() {
            return found.newScope();
        }
    }
}
