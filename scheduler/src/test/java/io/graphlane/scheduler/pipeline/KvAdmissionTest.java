package io.graphlane.scheduler.pipeline;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.actors.lane.LaneGroup;
import io.graphlane.testkit.sim.SimBackend;
import io.graphlane.testkit.sim.SimCompletion;
import io.graphlane.testkit.sim.SimExecutor;
import io.graphlane.testkit.sim.SimWork;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Admission by KV-cache memory: each request reserves its prompt plus its maximum of new tokens, in positions, times
 * the program's bytes per position (1 here, so a reservation is its positions). The scripted stages hold or fail the
 * first work of chosen requests, which are told apart by their first prompt token; the stages free an ended request's
 * caches by change works on their lanes, as the Llama stages do.
 */
class KvAdmissionTest {
    private static final ActorTestKit TESTKIT = ActorTestKit.create();
    private static final AtomicInteger NAMES = new AtomicInteger();

    private SimBackend backend;
    private LaneGroup<SimExecutor, SimCompletion, SimWork> lanes;
    private ScriptedProgram program;

    @BeforeEach
    void start() {
        backend = SimBackend.create();
    }

    @AfterEach
    void stop() throws Exception {
        if (lanes != null) {
            lanes.stop().toCompletableFuture().get(30, TimeUnit.SECONDS);
        }
        backend.close();
    }

    @AfterAll
    static void shutdown() {
        TESTKIT.shutdownTestKit();
    }

    /** A pipeline of two stages whose requests reserve one byte per position, within {@code budget} bytes. */
    private Pipeline<SimWork, ScriptedProgram.Slot> pipeline(int maxActive, int maxQueued, long budget) {
        lanes = LaneGroup.builder(TESTKIT.system(), backend).lanes("stage-0", "stage-1").spawn();
        program = new ScriptedProgram(2);
        program.bytesPerPosition = 1;
        program.changesOnLanes = true;
        return Pipeline.start(TESTKIT.system(), lanes.registry(), lanes.laneIds(), program,
                new PipelineSettings(maxActive, maxQueued, 8, 2, budget), "kv-engine-" + NAMES.incrementAndGet());
    }

    /** A request whose first prompt token is {@code tag}, reserving {@code positions} positions (at least 2). */
    private static PipelineRequest request(int tag, int positions) {
        return new PipelineRequest(new int[] {tag}, positions - 1, -1, Long.MAX_VALUE, null);
    }

    /** Holds stage 0's first work of the requests tagged {@code tags} until {@code backend.release("first-" + tag)}. */
    private void holdFirstStepOf(int... tags) {
        program.override = (stage, batch) -> {
            if (stage == 0 && batch.entries().size() == 1 && batch.entries().get(0).startPosition() == 0) {
                int tag = batch.entries().get(0).tokens()[0];
                for (int t : tags) {
                    if (t == tag) {
                        return SimWork.held("first-" + tag);
                    }
                }
            }
            return null;
        };
    }

    /** Stops the engine, then checks every byte reserved was given back exactly once. */
    private static void assertEveryReservationReleasedOnce(Pipeline<?, ?> p, long expectedReserved) throws Exception {
        Admission admission = p.admission();
        assertTrue(admission.releasedTotal() <= admission.reservedTotal(), "never more given back than reserved: released "
                + admission.releasedTotal() + " of " + admission.reservedTotal());
        p.stop(new IllegalStateException("test over")).toCompletableFuture().get(30, TimeUnit.SECONDS);
        assertEquals(expectedReserved, admission.reservedTotal(), "bytes reserved over the test");
        assertEquals(admission.reservedTotal(), admission.releasedTotal(), "every reservation given back once");
        assertEquals(0, admission.reservedBytes());
        assertEquals(0, admission.active());
        assertEquals(0, admission.queued());
    }

    @Test
    void reservationsStartWhileTheyFitWaitWhenTheyDoNotAndAreRefusedWhenTheyNeverCould() throws Exception {
        Pipeline<SimWork, ScriptedProgram.Slot> p = pipeline(8, 1, 100);
        RecordingListener first = new RecordingListener();
        RecordingListener second = new RecordingListener();
        RecordingListener third = new RecordingListener();
        // The first request's first step holds the lane, so nothing ends before the test lets it; and what admission held
        // when the third request's first step was planned.
        CompletableFuture<String> thirdStarted = new CompletableFuture<>();
        program.override = (stage, batch) -> {
            for (MicroBatch.Entry e : batch.entries()) {
                if (stage == 0 && e.tokens()[0] == 3 && e.startPosition() == 0) {
                    thirdStarted.complete("second ended " + second.ended.isDone() + ", reserved " + p.kvReservedBytes());
                }
            }
            MicroBatch.Entry only = batch.entries().get(0);
            return stage == 0 && batch.entries().size() == 1 && only.tokens()[0] == 1 && only.startPosition() == 0
                    ? SimWork.held("first-1") : null;
        };
        p.submit(request(1, 60), first);
        p.submit(request(2, 30), second);
        assertEquals(90, p.kvReservedBytes(), "both fit the budget together: each reserved at submission");
        p.submit(request(3, 20), third);
        assertEquals(1, p.admission().queued(), "90 + 20 do not fit 100: the third waits");
        assertEquals(90, p.kvReservedBytes());

        KvBudgetExceededException never = assertThrows(KvBudgetExceededException.class,
                () -> p.submit(request(4, 101), new RecordingListener()));
        assertEquals(101, never.reservation());
        assertEquals(100, never.budget());
        assertTrue(never.getMessage().contains("1 tokens") && never.getMessage().contains("100 new tokens")
                && never.getMessage().contains("99 new tokens fit"), never.getMessage());
        PipelineOverloadedException full = assertThrows(PipelineOverloadedException.class,
                () -> p.submit(request(5, 2), new RecordingListener()));
        assertFalse(full.getMessage().contains("max-") || full.getMessage().contains("graphlane."), "names no setting: " + full.getMessage());
        assertTrue(full.getMessage().contains("90 of the 100 positions"), full.getMessage());
        assertEquals(90, p.kvReservedBytes(), "refusals reserve nothing");
        assertEquals(1, p.admission().queued());

        backend.release("first-1");
        assertEquals(EngineFinishReason.LENGTH, first.ended.get(30, TimeUnit.SECONDS));
        assertEquals(EngineFinishReason.LENGTH, second.ended.get(30, TimeUnit.SECONDS));
        assertEquals(EngineFinishReason.LENGTH, third.ended.get(30, TimeUnit.SECONDS));
        // The second (29 tokens) ends before the first (59): the third started only once the second's room was given back.
        assertEquals("second ended true, reserved 80", thirdStarted.get(30, TimeUnit.SECONDS));
        assertEquals(ScriptedProgram.expected(new int[] {3}, 19), third.tokens);
        assertEveryReservationReleasedOnce(p, 60 + 30 + 20);
    }

    @Test
    void aReservationIsGivenBackOnlyOnceEveryStageFreedTheCachesItCovers() throws Exception {
        Pipeline<SimWork, ScriptedProgram.Slot> p = pipeline(8, 4, 10);
        holdFirstStepOf(2);
        // The first change work of stage 1 holds: the ended request's caches there are not freed yet.
        AtomicInteger changeWorksOnStage1 = new AtomicInteger();
        program.changeWork = stage -> stage == 1 && changeWorksOnStage1.incrementAndGet() == 1 ? SimWork.held("free-stage-1") : null;
        RecordingListener first = new RecordingListener();
        RecordingListener second = new RecordingListener();
        p.submit(request(1, 10), first);
        p.submit(request(2, 10), second);
        assertEquals(1, p.admission().queued(), "the budget holds one of them");
        assertEquals(EngineFinishReason.LENGTH, first.ended.get(30, TimeUnit.SECONDS));
        backend.whenStarted("free-stage-1").toCompletableFuture().get(30, TimeUnit.SECONDS);
        // The engine sent the change works and tried to start the queued request in one message; a round trip after it
        // shows what it decided.
        p.stats().toCompletableFuture().get(30, TimeUnit.SECONDS);
        assertEquals(10, p.kvReservedBytes(), "the first's reservation is held while stage 1 still holds its caches");
        assertEquals(1, p.admission().queued(), "the second still waits");
        assertFalse(backend.isStarted("first-2"));

        backend.release("free-stage-1");
        backend.whenStarted("first-2").toCompletableFuture().get(30, TimeUnit.SECONDS);
        assertEquals(10, p.kvReservedBytes(), "the second holds its own reservation; the first's was given back once");
        backend.release("first-2");
        assertEquals(EngineFinishReason.LENGTH, second.ended.get(30, TimeUnit.SECONDS));
        assertEveryReservationReleasedOnce(p, 20);
    }

    @Test
    void aFinishedRequestGivesItsRoomToTheQueuedOne() throws Exception {
        Pipeline<SimWork, ScriptedProgram.Slot> p = pipeline(8, 4, 10);
        RecordingListener first = new RecordingListener();
        RecordingListener second = new RecordingListener();
        p.submit(request(1, 10), first);
        p.submit(request(2, 10), second);
        assertEquals(EngineFinishReason.LENGTH, first.ended.get(30, TimeUnit.SECONDS));
        assertEquals(EngineFinishReason.LENGTH, second.ended.get(30, TimeUnit.SECONDS));
        assertEveryReservationReleasedOnce(p, 20);
    }

    @Test
    void aRequestCancelledWhileQueuedReservedNothingAndLeavesTheQueue() throws Exception {
        Pipeline<SimWork, ScriptedProgram.Slot> p = pipeline(8, 1, 10);
        holdFirstStepOf(1);
        RecordingListener first = new RecordingListener();
        RecordingListener queued = new RecordingListener();
        p.submit(request(1, 10), first);
        long id = p.submit(request(2, 10), queued);
        assertThrows(PipelineOverloadedException.class, () -> p.submit(request(3, 2), new RecordingListener()));
        p.cancel(id);
        ExecutionException e = assertThrows(ExecutionException.class, () -> queued.ended.get(30, TimeUnit.SECONDS));
        assertInstanceOf(RequestCancelledException.class, e.getCause());
        assertEquals(0, p.admission().queued(), "its place in the queue is free once its end is reported");
        assertEquals(10, p.kvReservedBytes());
        RecordingListener next = new RecordingListener();
        p.submit(request(4, 10), next); // queued in the place the cancelled one left
        backend.release("first-1");
        assertEquals(EngineFinishReason.LENGTH, first.ended.get(30, TimeUnit.SECONDS));
        assertEquals(EngineFinishReason.LENGTH, next.ended.get(30, TimeUnit.SECONDS));
        assertEveryReservationReleasedOnce(p, 20);
    }

    @Test
    void aRequestCancelledWhileItsStepRunsGivesItsRoomBackOnceTheStepReturnedAndItsCachesAreFreed() throws Exception {
        Pipeline<SimWork, ScriptedProgram.Slot> p = pipeline(8, 4, 10);
        holdFirstStepOf(1);
        RecordingListener running = new RecordingListener();
        RecordingListener queued = new RecordingListener();
        long id = p.submit(request(1, 10), running);
        p.submit(request(2, 10), queued);
        backend.whenStarted("first-1").toCompletableFuture().get(30, TimeUnit.SECONDS);
        p.cancel(id);
        ExecutionException e = assertThrows(ExecutionException.class, () -> running.ended.get(30, TimeUnit.SECONDS));
        assertInstanceOf(RequestCancelledException.class, e.getCause());
        p.stats().toCompletableFuture().get(30, TimeUnit.SECONDS);
        assertEquals(1, p.admission().queued(), "the cancelled request's step still runs: its room is not free");
        assertEquals(10, p.kvReservedBytes());
        backend.release("first-1");
        assertEquals(EngineFinishReason.LENGTH, queued.ended.get(30, TimeUnit.SECONDS));
        assertEveryReservationReleasedOnce(p, 20);
    }

    @Test
    void aFailedRequestGivesItsRoomToTheQueuedOne() throws Exception {
        Pipeline<SimWork, ScriptedProgram.Slot> p = pipeline(8, 4, 10);
        RuntimeException boom = new RuntimeException("stage 1 failed");
        program.override = (stage, batch) -> stage == 1 && batch.entries().get(0).tokens()[0] == 1 ? SimWork.failing(boom) : null;
        RecordingListener failing = new RecordingListener();
        RecordingListener queued = new RecordingListener();
        p.submit(request(1, 10), failing);
        p.submit(request(2, 10), queued);
        ExecutionException e = assertThrows(ExecutionException.class, () -> failing.ended.get(30, TimeUnit.SECONDS));
        assertEquals(boom, e.getCause());
        assertEquals(EngineFinishReason.LENGTH, queued.ended.get(30, TimeUnit.SECONDS));
        assertEveryReservationReleasedOnce(p, 20);
        // Planned in the engine's message that ended each request: done once the engine stopped.
        assertEquals(2, program.changeWorks.get(0).get(), "one change work per stage for each ended request that reached the stages");
    }

    @Test
    void aRequestPastItsDeadlineGivesItsRoomToTheQueuedOne() throws Exception {
        Pipeline<SimWork, ScriptedProgram.Slot> p = pipeline(8, 4, 1_000_001);
        CountingListener late = new CountingListener();
        CompletableFuture<Boolean> queuedStartedAfterLateEnded = new CompletableFuture<>();
        program.override = (stage, batch) -> {
            if (batch.entries().get(0).tokens()[0] == 2 && batch.entries().get(0).startPosition() == 0) {
                queuedStartedAfterLateEnded.complete(late.ended.isDone());
            }
            return null;
        };
        // It would generate a million tokens: its deadline ends it first, after the steps it took.
        p.submit(new PipelineRequest(new int[] {1}, 1_000_000, -1, System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(200), null), late);
        RecordingListener queued = new RecordingListener();
        p.submit(request(2, 10), queued);
        ExecutionException e = assertThrows(ExecutionException.class, () -> late.ended.get(30, TimeUnit.SECONDS));
        assertInstanceOf(RequestDeadlineExceededException.class, e.getCause());
        assertTrue(late.tokens.get() > 0, "it ran steps before its deadline");
        assertEquals(EngineFinishReason.LENGTH, queued.ended.get(30, TimeUnit.SECONDS));
        assertTrue(queuedStartedAfterLateEnded.get(30, TimeUnit.SECONDS), "the queued request started once the late one's room was back");
        assertEveryReservationReleasedOnce(p, 1_000_001 + 10);
    }

    @Test
    void aStoppedEngineGivesBackTheReservationsOfTheRequestsItHeld() throws Exception {
        Pipeline<SimWork, ScriptedProgram.Slot> p = pipeline(8, 4, 10);
        holdFirstStepOf(1);
        RecordingListener running = new RecordingListener();
        RecordingListener queued = new RecordingListener();
        p.submit(request(1, 10), running);
        p.submit(request(2, 10), queued);
        backend.whenStarted("first-1").toCompletableFuture().get(30, TimeUnit.SECONDS);
        CompletableFuture<PipelineEngine.Stopped> stopped = p.stop(new IllegalStateException("shutting down")).toCompletableFuture();
        assertThrows(ExecutionException.class, () -> running.ended.get(30, TimeUnit.SECONDS));
        assertThrows(ExecutionException.class, () -> queued.ended.get(30, TimeUnit.SECONDS));
        backend.release("first-1");
        stopped.get(30, TimeUnit.SECONDS);
        Admission admission = p.admission();
        assertEquals(10, admission.reservedTotal());
        assertEquals(10, admission.releasedTotal());
        assertEquals(0, admission.queued());
        assertEquals(0, admission.active());
    }

    @Test
    void aReservationWhoseChangeWorkALaneRefusedIsGivenBackWithTheNextRound() throws Exception {
        // One stage on a lane that holds one work running and one waiting; one micro-batch of one request at a time.
        lanes = LaneGroup.builder(TESTKIT.system(), backend).lanes("stage-0")
                .settings(io.graphlane.actors.lane.LaneSettings.fromConfig(TESTKIT.system().settings().config()).withLimits(1, 1))
                .spawn();
        program = new ScriptedProgram(1);
        program.bytesPerPosition = 1;
        program.changesOnLanes = true;
        Pipeline<SimWork, ScriptedProgram.Slot> p = Pipeline.start(TESTKIT.system(), lanes.registry(), lanes.laneIds(), program,
                new PipelineSettings(8, 8, 1, 1, 30), "kv-engine-" + NAMES.incrementAndGet());
        RecordingListener early = new RecordingListener();
        RecordingListener second = new RecordingListener();
        RecordingListener held = new RecordingListener();
        // The held request's first step holds the lane; the other two took a step each before it and wait for the next.
        program.override = (stage, batch) -> batch.entries().get(0).tokens()[0] == 3 && batch.entries().get(0).startPosition() == 0
                ? SimWork.held("first-3") : null;
        long earlyId = p.submit(request(1, 10), early);
        long secondId = p.submit(request(2, 10), second);
        p.submit(request(3, 10), held);
        backend.whenStarted("first-3").toCompletableFuture().get(30, TimeUnit.SECONDS);
        CompletableFuture<Boolean> queuedStartedAfterHeldEnded = new CompletableFuture<>();
        program.override = (stage, batch) -> {
            if (batch.entries().get(0).tokens()[0] == 4 && batch.entries().get(0).startPosition() == 0) {
                queuedStartedAfterHeldEnded.complete(held.ended.isDone());
            }
            return null;
        };
        RecordingListener queued = new RecordingListener();
        p.submit(request(4, 20), queued);
        // The first cancel's change work waits on the lane behind the held step; the second's is refused (the lane is full).
        p.cancel(earlyId);
        assertThrows(ExecutionException.class, () -> early.ended.get(30, TimeUnit.SECONDS));
        p.cancel(secondId);
        assertThrows(ExecutionException.class, () -> second.ended.get(30, TimeUnit.SECONDS));
        p.stats().toCompletableFuture().get(30, TimeUnit.SECONDS);
        backend.release("first-3");
        assertEquals(EngineFinishReason.LENGTH, held.ended.get(30, TimeUnit.SECONDS));
        assertEquals(EngineFinishReason.LENGTH, queued.ended.get(30, TimeUnit.SECONDS));
        // Had the refused round given its reservation back, the queued request (20) would have fit beside the held one.
        assertTrue(queuedStartedAfterHeldEnded.get(30, TimeUnit.SECONDS), "the queued request started only with the next round");
        assertEveryReservationReleasedOnce(p, 10 + 10 + 10 + 20);
    }

    @Test
    void manyRequestsOfTheLongestLengthRunWithinTheBudgetAndAllFinish() throws Exception {
        // 16 requests of 64 positions each against room for 4 of them at once.
        Pipeline<SimWork, ScriptedProgram.Slot> p = pipeline(16, 16, 4 * 64);
        List<RecordingListener> listeners = new ArrayList<>();
        AtomicInteger mostRunning = new AtomicInteger();
        java.util.concurrent.atomic.AtomicLong mostReserved = new java.util.concurrent.atomic.AtomicLong();
        program.override = (stage, batch) -> {
            mostRunning.accumulateAndGet(p.admission().active(), Math::max);
            mostReserved.accumulateAndGet(p.kvReservedBytes(), Math::max);
            return null;
        };
        for (int r = 0; r < 16; r++) {
            RecordingListener l = new RecordingListener();
            listeners.add(l);
            p.submit(request(r + 1, 64), l);
        }
        for (RecordingListener l : listeners) {
            assertEquals(EngineFinishReason.LENGTH, l.ended.get(30, TimeUnit.SECONDS));
            assertEquals(63, l.tokens.size());
        }
        assertTrue(mostRunning.get() <= 4, "at most 4 ran at once: " + mostRunning.get());
        assertTrue(mostReserved.get() <= 4 * 64, "reserved within the budget: " + mostReserved.get());
        assertEveryReservationReleasedOnce(p, 16 * 64);
    }

    /** Counts tokens without keeping them: for a request that generates many. */
    private static final class CountingListener implements EngineListener {
        final AtomicInteger tokens = new AtomicInteger();
        final CompletableFuture<EngineFinishReason> ended = new CompletableFuture<>();

        @Override
        public void onToken(int tokenId) {
            tokens.incrementAndGet();
        }

        @Override
        public void onFinished(EngineFinishReason reason) {
            ended.complete(reason);
        }

        @Override
        public void onFailed(Throwable cause) {
            ended.completeExceptionally(cause);
        }
    }
}
