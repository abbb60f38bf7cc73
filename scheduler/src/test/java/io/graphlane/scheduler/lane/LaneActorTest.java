package io.graphlane.scheduler.lane;

import io.graphlane.actors.lane.DeadlineExceededException;
import io.graphlane.actors.lane.LaneGroup;
import io.graphlane.actors.lane.LaneProtocol;
import io.graphlane.actors.lane.LaneSettings;
import io.graphlane.actors.lane.LaneStoppedException;
import io.graphlane.actors.lane.WorkCancelledException;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.actors.lane.LaneProtocol.Cancel;
import io.graphlane.actors.lane.LaneProtocol.Rejected;
import io.graphlane.actors.lane.LaneProtocol.Submit;
import io.graphlane.actors.lane.LaneProtocol.SubmitBatch;
import io.graphlane.actors.lane.LaneProtocol.Submitted;
import io.graphlane.backend.cpu.CpuBackend;
import io.graphlane.backend.cpu.CpuCompletion;
import io.graphlane.backend.cpu.CpuExecutor;
import io.graphlane.backend.cpu.CpuWork;
import io.graphlane.core.completion.PoisonedPreconditionException;
import io.graphlane.core.graph.CompletionHandle;
import io.graphlane.core.graph.LaneId;
import java.time.Duration;
import java.util.List;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class LaneActorTest {
    private static final ActorTestKit KIT = ActorTestKit.create();
    private static final LaneId A = LaneId.of("a");
    private static final LaneId B = LaneId.of("b");

    private CpuBackend backend;
    private LaneGroup<CpuExecutor, CpuCompletion, CpuWork> lanes;
    private Inbox inbox;
    private long sequence;

    @AfterAll
    static void shutdownKit() {
        KIT.shutdownTestKit();
    }

    @BeforeEach
    void spawnLanes() {
        backend = new CpuBackend();
        lanes = spawn(LaneSettings.fromConfig(KIT.system().settings().config()));
        inbox = new Inbox(KIT);
    }

    private LaneGroup<CpuExecutor, CpuCompletion, CpuWork> spawn(LaneSettings settings) {
        return LaneGroup.builder(KIT.system(), backend).lanes("a", "b").settings(settings).spawn();
    }

    @AfterEach
    void closeBackend() {
        backend.close();
    }

    private CompletionHandle handle(LaneId lane) {
        return CompletionHandle.local(lane, sequence++);
    }

    private Submit<CpuWork> submit(CompletionHandle h, CpuWork work) {
        return Submit.of(h, work, inbox.ref());
    }

    private void send(Submit<CpuWork> s) {
        lanes.lane(s.handle().lane()).tell(s);
    }

    @Test
    void submitsWorkAndPublishesItsExactCompletion() throws Exception {
        CompletionHandle h = handle(A);
        Gate work = new Gate("w");
        Tracked value = Tracked.heldBy(work);
        send(submit(h, work).retaining(value));

        Submitted submitted = inbox.expect(Submitted.class, h);
        assertTrue(submitted.label().startsWith(backend.deviceName() + "/"), submitted.label());
        assertTrue(work.awaitStarted());
        inbox.expectNothingFor(h, Duration.ofMillis(100));
        assertEquals(0, value.closes(), "retained value released while its work was still running");

        work.open();
        inbox.expectSuccess(h);
        assertTrue(value.awaitClosed());
        assertEquals(1, value.closes());
        assertFalse(value.releasedBeforeEnd());
    }

    @Test
    void consumerSentBeforeItsProducerWaitsInItsLaneAndRunsAfterIt() throws Exception {
        CompletionHandle producer = handle(A);
        CompletionHandle consumer = handle(B);
        Gate p = new Gate("p");
        Gate c = Gate.open("c");
        // The consumer goes out first, naming a handle its producer's lane has not seen yet.
        send(submit(consumer, c).after(producer));
        send(submit(producer, p).consumedBy(1));

        inbox.expect(Submitted.class, producer);
        inbox.expect(Submitted.class, consumer); // ordered on the device side, handed to the executor at once
        assertTrue(p.awaitStarted());
        assertFalse(c.hasStarted(), "consumer started before its producer on another lane finished");
        p.open();
        inbox.expectSuccess(producer);
        inbox.expectSuccess(consumer);
        assertTrue(c.startTick > p.endTick, "consumer started at tick " + c.startTick + " before producer ended at " + p.endTick);
        assertStatus(lanes.lane(A), 0, 0, 0);
    }

    @Test
    void failedProducerPoisonsConsumerOnOtherLane() throws Exception {
        CompletionHandle producer = handle(A);
        CompletionHandle consumer = handle(B);
        Gate p = new Gate("p");
        Gate c = Gate.open("c");
        Tracked value = Tracked.heldBy(c);
        send(submit(producer, p).consumedBy(1));
        send(submit(consumer, c).after(producer).retaining(value));
        String producerLabel = inbox.expect(Submitted.class, producer).label();
        inbox.expect(Submitted.class, consumer);

        p.openFailing();
        assertInstanceOf(IllegalStateException.class, inbox.expectFailure(producer, IllegalStateException.class));
        PoisonedPreconditionException poisoned = inbox.expectFailure(consumer, PoisonedPreconditionException.class);
        assertEquals(producerLabel, poisoned.rootProducer(), poisoned.getMessage());
        assertTrue(poisoned.getMessage().contains("failed on purpose"), poisoned.getMessage());
        assertFalse(c.ran(), "poisoned consumer ran on bad inputs");
        assertTrue(value.awaitClosed());
        assertEquals(1, value.closes());
    }

    @Test
    void producerThatAlreadyFailedPoisonsConsumerWithoutSubmittingIt() throws Exception {
        CompletionHandle producer = handle(A);
        CompletionHandle consumer = handle(B);
        send(submit(producer, Gate.failing("p")).consumedBy(1));
        String producerLabel = inbox.expect(Submitted.class, producer).label();
        inbox.expectFailure(producer, IllegalStateException.class);

        Gate c = Gate.open("c");
        Tracked value = Tracked.heldBy(c);
        send(submit(consumer, c).after(producer).retaining(value));
        PoisonedPreconditionException poisoned = inbox.expectFailure(consumer, PoisonedPreconditionException.class);
        assertEquals(producerLabel, poisoned.rootProducer());
        assertTrue(poisoned.getMessage().contains(consumer.toString()), poisoned.getMessage());
        assertFalse(c.ran());
        assertEquals(1, value.closes(), "values of work that never ran are released at once, exactly once");
        // Never submitted: no Submitted reply was sent for it.
        inbox.expectNothingFor(consumer, Duration.ofMillis(50));
        assertStatus(lanes.lane(A), 0, 0, 0);
    }

    @Test
    void failedSameLaneProducerPoisonsItsConsumer() throws Exception {
        CompletionHandle producer = handle(A);
        CompletionHandle consumer = handle(A);
        CompletionHandle independent = handle(A);
        Gate p = new Gate("p");
        Gate c = Gate.open("c");
        Gate i = Gate.open("i");
        send(submit(producer, p).consumedBy(1));
        send(submit(consumer, c).after(producer));
        send(submit(independent, i));
        p.openFailing();
        inbox.expectFailure(producer, IllegalStateException.class);
        PoisonedPreconditionException poisoned = inbox.expectFailure(consumer, PoisonedPreconditionException.class);
        assertTrue(poisoned.getMessage().contains("failed on purpose"));
        inbox.expectSuccess(independent);
        assertFalse(c.ran());
        assertTrue(i.ran(), "work that does not follow the failed producer still runs");
    }

    @Test
    void failedSameLaneProducerStillQueuedWhenItsConsumerArrivesPoisonsIt() throws Exception {
        lanes = spawn(LaneSettings.fromConfig(KIT.system().settings().config()).withLimits(1, 8));
        CompletionHandle blocker = handle(A);
        CompletionHandle producer = handle(A);
        CompletionHandle consumer = handle(A);
        Gate block = new Gate("blocker");
        Gate c = Gate.open("c");
        send(submit(blocker, block));
        assertTrue(block.awaitStarted());
        send(submit(producer, Gate.failing("p")).consumedBy(1));
        send(submit(consumer, c).after(producer)); // the producer is still queued: the consumer waits for it in the lane
        block.open();
        inbox.expectSuccess(blocker);
        inbox.expectFailure(producer, IllegalStateException.class);
        inbox.expectFailure(consumer, PoisonedPreconditionException.class);
        assertFalse(c.ran(), "a consumer of a failed producer on the same lane ran");
    }

    @Test
    void theLanePublishesItsQueuedAndInFlightWorkAsItChanges() throws Exception {
        lanes = spawn(LaneSettings.fromConfig(KIT.system().settings().config()).withLimits(1, 8));
        CompletionHandle running = handle(A);
        Gate block = new Gate("running");
        send(submit(running, block));
        assertTrue(block.awaitStarted());
        CompletionHandle second = handle(A);
        CompletionHandle third = handle(A);
        send(submit(second, Gate.open("second")));
        send(submit(third, Gate.open("third")));
        // The status reply comes after the actor handled both submissions, and it publishes in the same handler.
        assertStatus(lanes.lane(A), 1, 2, 3);
        assertEquals(1, lanes.load(A).inFlight());
        assertEquals(2, lanes.load(A).queued());
        assertEquals(0, lanes.load(B).inFlight() + lanes.load(B).queued(), "the other lane holds nothing");
        block.open();
        inbox.expectSuccess(running);
        inbox.expectSuccess(second);
        inbox.expectSuccess(third);
        assertStatus(lanes.lane(A), 0, 0, 0);
        assertEquals(0, lanes.load(A).inFlight());
        assertEquals(0, lanes.load(A).queued());
    }

    @Test
    void overloadedLaneRejectsAtOnceAndAdmitsAgainOnceWorkFinishes() throws Exception {
        lanes = spawn(LaneSettings.fromConfig(KIT.system().settings().config()).withLimits(1, 1));
        CompletionHandle first = handle(A);
        CompletionHandle second = handle(A);
        CompletionHandle third = handle(A);
        Gate g1 = new Gate("1");
        Gate g2 = Gate.open("2");
        Tracked refusedValue = new Tracked(() -> true);
        send(submit(first, g1));
        send(submit(second, g2));
        send(submit(third, Gate.open("3")).retaining(refusedValue));

        Rejected rejected = inbox.expect(Rejected.class, third);
        LaneProtocol.LaneOverloaded overloaded = assertInstanceOf(LaneProtocol.LaneOverloaded.class, rejected.reason());
        assertEquals(1, overloaded.inFlight());
        assertEquals(1, overloaded.queued());
        assertTrue(rejected.toException().getMessage().contains("max-queued 1"), rejected.toException().getMessage());
        assertEquals(1, refusedValue.closes(), "a refused submission's values are released");

        // A batch is admitted whole or not at all.
        CompletionHandle b1 = handle(A);
        CompletionHandle b2 = handle(A);
        lanes.lane(A).tell(new SubmitBatch<>(List.of(submit(b1, Gate.open("b1")), submit(b2, Gate.open("b2")))));
        inbox.expect(Rejected.class, b1);
        inbox.expect(Rejected.class, b2);

        g1.open();
        inbox.expectSuccess(first);
        inbox.expectSuccess(second);
        CompletionHandle later = handle(A);
        send(submit(later, Gate.open("later")));
        inbox.expectSuccess(later);
    }

    @Test
    void cancelDropsQueuedWorkAndAbandonsSubmittedWorkWithoutPublishingItsResult() throws Exception {
        long request = 7;
        CompletionHandle running = handle(A);
        CompletionHandle queuedOnLane = handle(B);
        CompletionHandle otherRequest = handle(A);
        Gate g = new Gate("running");
        Tracked heldValue = Tracked.heldBy(g);
        Gate q = Gate.open("queued");
        Tracked droppedValue = Tracked.heldBy(q);
        send(submit(running, g).retaining(heldValue).inScope(request).consumedBy(1));
        send(submit(queuedOnLane, q).after(running).retaining(droppedValue).inScope(request));
        send(submit(otherRequest, Gate.open("other")).inScope(8));
        inbox.expect(Submitted.class, running);
        assertTrue(g.awaitStarted());
        // The consumer was handed to the executor at once (device-side order); cancel a waiting one instead:
        CompletionHandle waiting = handle(B);
        CompletionHandle neverSent = handle(A);
        Gate w = Gate.open("waiting");
        Tracked waitingValue = Tracked.heldBy(w);
        send(submit(waiting, w).after(neverSent).retaining(waitingValue).inScope(request));

        // B first: A answers B's subscription to neverSent as cancelled when it cancels the request, and B must have
        // dropped its waiting work for its own cancel before that answer (which would poison it) can reach it.
        lanes.lane(B).tell(new Cancel(request));
        lanes.lane(A).tell(new Cancel(request));
        WorkCancelledException dropped = inbox.expectFailure(waiting, WorkCancelledException.class);
        assertFalse(dropped.abandoned());
        assertEquals(1, waitingValue.closes());
        assertFalse(w.ran());

        // The running work keeps its value until its exact completion, and its result is never published.
        inbox.expectNothingFor(running, Duration.ofMillis(100));
        assertEquals(0, heldValue.closes());
        g.openFailing();
        WorkCancelledException abandoned = inbox.expectFailure(running, WorkCancelledException.class);
        assertTrue(abandoned.abandoned());
        assertTrue(heldValue.awaitClosed());
        assertFalse(heldValue.releasedBeforeEnd());
        assertEquals(1, heldValue.closes());
        inbox.expectSuccess(otherRequest);
        inbox.expect(LaneProtocol.Finished.class, queuedOnLane);

        // Later submissions of the cancelled request are refused.
        CompletionHandle late = handle(A);
        send(submit(late, Gate.open("late")).inScope(request));
        assertInstanceOf(LaneProtocol.ScopeCancelled.class, inbox.expect(Rejected.class, late).reason());
    }

    @Test
    void stopLetsInFlightWorkFinishDropsQueuedWorkThenStops() throws Exception {
        lanes = spawn(LaneSettings.fromConfig(KIT.system().settings().config()).withLimits(1, 4));
        CompletionHandle inFlight = handle(A);
        CompletionHandle queuedBehind = handle(A);
        Gate g = new Gate("in flight");
        Gate q = Gate.open("queued");
        Tracked qValue = Tracked.heldBy(q);
        send(submit(inFlight, g));
        send(submit(queuedBehind, q).retaining(qValue));
        assertTrue(g.awaitStarted());

        TestProbe<LaneProtocol.Stopped> stopped = KIT.createTestProbe();
        lanes.lane(A).tell(new LaneProtocol.Stop(stopped.ref()));
        inbox.expectFailure(queuedBehind, LaneStoppedException.class);
        assertEquals(1, qValue.closes());
        CompletionHandle tooLate = handle(A);
        send(submit(tooLate, Gate.open("too late")));
        assertInstanceOf(LaneProtocol.LaneStopped.class, inbox.expect(Rejected.class, tooLate).reason());
        stopped.expectNoMessage(Duration.ofMillis(100));

        g.open();
        inbox.expectSuccess(inFlight);
        assertEquals(A, stopped.receiveMessage(Duration.ofSeconds(10)).lane());
        stopped.expectTerminated(lanes.lane(A), Duration.ofSeconds(10));
    }

    @Test
    void consumerOfALaneThatStopsIsPoisonedInsteadOfWaitingForever() {
        CompletionHandle neverSubmitted = handle(A);
        CompletionHandle consumer = handle(B);
        send(submit(consumer, Gate.open("c")).after(neverSubmitted));
        TestProbe<LaneProtocol.Stopped> stopped = KIT.createTestProbe();
        lanes.lane(A).tell(new LaneProtocol.Stop(stopped.ref()));
        PoisonedPreconditionException poisoned = inbox.expectFailure(consumer, PoisonedPreconditionException.class);
        assertInstanceOf(LaneStoppedException.class, poisoned.rootCause());
    }

    @Test
    void refusesDuplicateHandlesWrongLanesAndSelfDependencies() {
        CompletionHandle h = handle(A);
        Gate g = new Gate("held");
        send(submit(h, g));
        send(submit(h, Gate.open("dup")));
        assertInstanceOf(LaneProtocol.DuplicateHandle.class, inbox.expect(Rejected.class, h).reason());

        CompletionHandle onB = handle(B);
        lanes.lane(A).tell(submit(onB, Gate.open("wrong")));
        LaneProtocol.Rejection wrong = inbox.expect(Rejected.class, onB).reason();
        assertTrue(wrong.message().contains("belongs to lane b but was submitted to lane a"), wrong.message());

        CompletionHandle self = handle(A);
        send(submit(self, Gate.open("self")).after(self));
        assertInstanceOf(LaneProtocol.SelfDependency.class, inbox.expect(Rejected.class, self).reason());
        g.open();
        inbox.expectSuccess(h);
    }

    @Test
    void workPastItsDeadlineIsNotSubmitted() {
        CompletionHandle h = handle(A);
        Gate g = Gate.open("late");
        send(submit(h, g).deadline(System.nanoTime() - 1));
        DeadlineExceededException e = inbox.expectFailure(h, DeadlineExceededException.class);
        assertTrue(e.getMessage().contains(h.toString()));
        assertFalse(g.ran());
    }

    @Test
    void resolutionIsKeptUntilEveryExpectedConsumerHasAskedThenForgotten() throws Exception {
        CompletionHandle producer = handle(A);
        send(submit(producer, Gate.open("p")).consumedBy(2));
        inbox.expectSuccess(producer);
        assertStatus(lanes.lane(A), 0, 0, 1);
        CompletionHandle c1 = handle(B);
        CompletionHandle c2 = handle(A);
        send(submit(c1, Gate.open("c1")).after(producer));
        inbox.expectSuccess(c1);
        assertStatus(lanes.lane(A), 0, 0, 1);
        send(submit(c2, Gate.open("c2")).after(producer));
        inbox.expectSuccess(c2);
        assertStatus(lanes.lane(A), 0, 0, 0);
        assertStatus(lanes.lane(B), 0, 0, 0);
    }

    @Test
    void forgetScopeDropsResolutionsNoConsumerAskedFor() {
        CompletionHandle producer = handle(A);
        send(submit(producer, Gate.open("p")).consumedBy(3).inScope(11));
        inbox.expectSuccess(producer);
        assertStatus(lanes.lane(A), 0, 0, 1);
        lanes.lane(A).tell(new LaneProtocol.ForgetScope(11));
        assertStatus(lanes.lane(A), 0, 0, 0);
    }

    private static void assertStatus(ActorRef<LaneProtocol.Command> lane, int inFlight, int queued, int known) {
        TestProbe<LaneProtocol.LaneStatus> probe = KIT.createTestProbe();
        lane.tell(new LaneProtocol.GetStatus(probe.ref()));
        LaneProtocol.LaneStatus status = probe.receiveMessage(Duration.ofSeconds(10));
        assertEquals(inFlight, status.inFlight(), "in flight: " + status);
        assertEquals(queued, status.queued(), "queued: " + status);
        assertEquals(known, status.knownHandles(), "known handles: " + status);
        assertEquals(0, status.pendingSubscriptions(), "pending subscriptions: " + status);
    }
}
