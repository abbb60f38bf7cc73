package io.graphlane.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.actors.lane.LaneProtocol;
import io.graphlane.actors.lane.LaneProtocol.Finished;
import io.graphlane.actors.lane.LaneProtocol.LaneReply;
import io.graphlane.actors.lane.LaneProtocol.Submit;
import io.graphlane.actors.lane.LaneStoppedException;
import io.graphlane.core.completion.Outcome;
import io.graphlane.core.completion.PoisonedPreconditionException;
import io.graphlane.core.graph.CompletionHandle;
import io.graphlane.core.graph.LaneId;
import io.graphlane.testkit.ledger.RetentionLedger;
import io.graphlane.testkit.sim.SimBackend;
import io.graphlane.testkit.sim.SimCompletion;
import io.graphlane.testkit.sim.SimExecutor;
import io.graphlane.testkit.sim.SimWork;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Props;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import com.typesafe.config.ConfigFactory;
import org.junit.jupiter.api.Test;

/**
 * A node stopped with stage work in flight (coordinated shutdown, as on SIGTERM): readiness turns false first, the
 * lanes refuse new work and drop queued work, in-flight steps finish within {@code graphlane.node.shutdown-grace},
 * the hosting's backend is shut down, and every retained value is released exactly once, never before its work
 * ended. Stages are {@link LaneStageHosting} lanes over the simulated device, whose retention ledger records every
 * value (these stages load no weights, so there are no leases to follow).
 */
class NodeShutdownTest {
    private static final String IN_FLIGHT = "stage-0 step in flight";

    @Test
    void stoppingANodeLetsInFlightStepsFinishReleasesEverythingOnceAndLeavesNothingHeld() throws Exception {
        RetentionLedger ledger = new RetentionLedger();
        SimBackend backend = SimBackend.builder().ledger(ledger).build();
        Run run = start(backend, "30s");
        try {
            run.node.shutdown();
            TestNodes.awaitCondition("readiness to turn false", Duration.ofSeconds(10), () -> !run.node.readiness().isReady());
            assertTrue(run.node.readiness().isStopping());

            // Work never started is dropped at once and its values released; new work is refused.
            run.replies.expectFailure(run.queued, LaneStoppedException.class);
            // Stage 1 may stop before or after stage 0 drops the step it waits for: its own lane drops it, or it is
            // poisoned by that dropped producer. Either way it never ran, and the lanes' stop is the root cause.
            Throwable waitingFailure = run.replies.failureOf(run.waiting);
            assertInstanceOf(LaneStoppedException.class,
                    waitingFailure instanceof PoisonedPreconditionException poisoned ? poisoned.rootCause() : waitingFailure,
                    "the waiting step's failure: " + waitingFailure);
            assertEquals(1, run.queuedValue.releaseCount());
            assertEquals(1, run.waitingValue.releaseCount());
            CompletionHandle late = CompletionHandle.local(run.stage0, 99);
            run.lanes.get(0).tell(Submit.<SimWork>of(late, SimWork.instant(), run.replies.ref));
            assertInstanceOf(LaneProtocol.LaneStopped.class, run.replies.expect(LaneProtocol.Rejected.class, late).reason());

            // The step in flight is let finish: the node waits for it (within the grace), holding its value.
            assertFalse(run.node.system().getWhenTerminated().toCompletableFuture().isDone(), "the node stopped before its in-flight step ended");
            assertEquals(0, run.inFlightValue.releaseCount());
            assertTrue(backend.release(IN_FLIGHT));
            assertTrue(run.replies.expect(Finished.class, run.inFlight).outcome().isSuccess());

            run.node.system().getWhenTerminated().toCompletableFuture().get(60, TimeUnit.SECONDS);
            assertTrue(run.stopped.isDone(), "the hosting was not stopped");
            assertTrue(backend.shutdown().isDone(), "the hosting's backend was not shut down");
            assertTrue(ledger.awaitSettled(Duration.ofSeconds(10)), ledger.toString());
            ledger.assertClean();
            assertEquals(3, ledger.entries().size());
        } finally {
            backend.release(IN_FLIGHT);
            run.node.shutdown().toCompletableFuture().get(60, TimeUnit.SECONDS);
        }
    }

    @Test
    void aStepOutlastingTheGraceKeepsItsValueUntilItEndsAfterTheNodeStopped() throws Exception {
        RetentionLedger ledger = new RetentionLedger();
        SimBackend backend = SimBackend.builder().ledger(ledger).build();
        Run run = start(backend, "1s");
        try {
            run.node.shutdown().toCompletableFuture().get(60, TimeUnit.SECONDS);
            assertEquals(1, run.queuedValue.releaseCount());
            assertEquals(1, run.waitingValue.releaseCount());
            assertEquals(0, run.inFlightValue.releaseCount(), "released while its step was still running");

            assertTrue(backend.release(IN_FLIGHT));
            assertTrue(ledger.awaitSettled(Duration.ofSeconds(10)), ledger.toString());
            ledger.assertClean();
        } finally {
            backend.release(IN_FLIGHT);
        }
    }

    /** A running one-node cluster hosting two stages, with a step in flight on stage 0, one queued, one waiting on stage 1. */
    private record Run(GraphlaneNode node, Replies replies, List<ActorRef<LaneProtocol.Command>> lanes, LaneId stage0,
                       CompletionHandle inFlight, CompletionHandle queued, CompletionHandle waiting,
                       RetentionLedger.Entry inFlightValue, RetentionLedger.Entry queuedValue, RetentionLedger.Entry waitingValue,
                       CompletableFuture<Void> stopped) {
    }

    private static Run start(SimBackend backend, String grace) throws Exception {
        LaneStageHosting<SimExecutor, SimCompletion, SimWork> lanes = LaneStageHosting.owning(backend);
        CompletableFuture<HostedStages> hostedStages = new CompletableFuture<>();
        CompletableFuture<Void> stopped = new CompletableFuture<>();
        StageHosting hosting = new StageHosting() {
            @Override
            public CompletionStage<HostedStages> host(ActorSystem<?> system, int rank, List<Integer> stages) {
                return lanes.host(system, rank, stages).whenComplete((h, e) -> hostedStages.complete(h));
            }

            @Override
            public CompletionStage<Void> stop(HostedStages hosted) {
                return lanes.stop(hosted).whenComplete((ok, e) -> stopped.complete(null));
            }
        };
        NodeSettings settings = TestNodes.localCluster(1).get(0);
        GraphlaneNode node = GraphlaneNode.start(settings, ConfigFactory.parseString(
                "graphlane.node.shutdown-grace = " + grace + "\ngraphlane.lane.max-in-flight = 1").withFallback(TestNodes.base()),
                2, hosting);
        node.hosted().toCompletableFuture().get(30, TimeUnit.SECONDS);
        TestNodes.awaitCondition("the node to turn ready", Duration.ofSeconds(10), () -> node.readiness().isReady());
        HostedStages hosted = hostedStages.get(10, TimeUnit.SECONDS);
        ActorRef<LaneProtocol.Command> stage0 = hosted.lanes().get(0);
        ActorRef<LaneProtocol.Command> stage1 = hosted.lanes().get(1);
        LaneId lane0 = LaneId.of(LaneStageHosting.laneName(0));
        LaneId lane1 = LaneId.of(LaneStageHosting.laneName(1));
        Replies replies = new Replies(node.system());
        RetentionLedger ledger = backend.ledger().orElseThrow();

        CompletionHandle inFlight = CompletionHandle.local(lane0, 0);
        RetentionLedger.Entry inFlightValue = ledger.acquire("activation of the step in flight");
        stage0.tell(Submit.<SimWork>of(inFlight, SimWork.held(IN_FLIGHT), replies.ref).retaining(inFlightValue));
        replies.expect(LaneProtocol.Submitted.class, inFlight);
        backend.whenStarted(IN_FLIGHT).toCompletableFuture().get(10, TimeUnit.SECONDS);

        CompletionHandle queued = CompletionHandle.local(lane0, 1);
        RetentionLedger.Entry queuedValue = ledger.acquire("activation of the queued step");
        stage0.tell(Submit.<SimWork>of(queued, SimWork.instant(), replies.ref).retaining(queuedValue).consumedBy(1));
        CompletionHandle waiting = CompletionHandle.local(lane1, 0);
        RetentionLedger.Entry waitingValue = ledger.acquire("activation of the step waiting for stage 0");
        stage1.tell(Submit.<SimWork>of(waiting, SimWork.instant(), replies.ref).after(queued).retaining(waitingValue));
        return new Run(node, replies, List.of(stage0, stage1), lane0, inFlight, queued, waiting, inFlightValue, queuedValue,
                waitingValue, stopped);
    }

    /** Lane replies collected by an actor inside the node's system, read here per handle. */
    private static final class Replies {
        final LinkedBlockingQueue<LaneReply> queue = new LinkedBlockingQueue<>();
        final java.util.List<LaneReply> buffered = new java.util.ArrayList<>();
        final ActorRef<LaneReply> ref;

        Replies(ActorSystem<?> system) {
            this.ref = system.systemActorOf(Behaviors.<LaneReply>receiveMessage(r -> {
                if (r instanceof LaneProtocol.Batch b) {
                    queue.addAll(b.replies());
                } else {
                    queue.add(r);
                }
                return Behaviors.same();
            }), "lane-replies", Props.empty());
        }

        <T extends LaneReply> T expect(Class<T> type, CompletionHandle handle) throws InterruptedException {
            long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
            while (true) {
                for (java.util.Iterator<LaneReply> it = buffered.iterator(); it.hasNext(); ) {
                    LaneReply r = it.next();
                    if (type.isInstance(r) && handle.equals(handleOf(r))) {
                        it.remove();
                        return type.cast(r);
                    }
                }
                LaneReply next = queue.poll(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                assertNotNull(next, "no " + type.getSimpleName() + " for " + handle + " within 10 s; got " + buffered);
                buffered.add(next);
            }
        }

        <X extends Throwable> X expectFailure(CompletionHandle handle, Class<X> cause) throws InterruptedException {
            return assertInstanceOf(cause, failureOf(handle));
        }

        /** The cause of {@code handle}'s failed outcome (the test fails if it finished otherwise). */
        Throwable failureOf(CompletionHandle handle) throws InterruptedException {
            Outcome outcome = expect(Finished.class, handle).outcome();
            return assertInstanceOf(Outcome.Failed.class, outcome, handle + " finished " + outcome).cause();
        }

        private static CompletionHandle handleOf(LaneReply r) {
            if (r instanceof LaneProtocol.Submitted s) {
                return s.handle();
            } else if (r instanceof LaneProtocol.Rejected s) {
                return s.handle();
            } else if (r instanceof Finished s) {
                return s.handle();
            }
            return null;
        }
    }
}
