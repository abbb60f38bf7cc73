package io.graphlane.scheduler.pipeline;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.actors.lane.LaneGroup;
import io.graphlane.actors.lane.LaneProtocol;
import io.graphlane.actors.lane.LaneRegistry;
import io.graphlane.actors.lane.Retained;
import io.graphlane.core.graph.LaneId;
import io.graphlane.core.completion.PoisonedPreconditionException;
import io.graphlane.testkit.sim.SimBackend;
import io.graphlane.testkit.sim.SimCompletion;
import io.graphlane.testkit.sim.SimExecutor;
import io.graphlane.testkit.sim.SimWork;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class PipelineEngineTest {
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

    private Pipeline<SimWork, ScriptedProgram.Slot> pipeline(int stages, PipelineSettings settings) {
        List<String> names = new ArrayList<>();
        for (int i = 0; i < stages; i++) {
            names.add("stage-" + i);
        }
        lanes = LaneGroup.builder(TESTKIT.system(), backend).lanes(names.toArray(String[]::new)).spawn();
        program = new ScriptedProgram(stages);
        return Pipeline.start(TESTKIT.system(), lanes.registry(), lanes.laneIds(), program, settings, "engine-" + NAMES.incrementAndGet());
    }

    private static PipelineRequest request(int[] prompt, int maxNew) {
        return new PipelineRequest(prompt, maxNew, -1, Long.MAX_VALUE, null);
    }

    @Test
    void everyRequestGetsItsTokensInOrderThroughEveryStage() throws Exception {
        Pipeline<SimWork, ScriptedProgram.Slot> p = pipeline(3, PipelineSettings.defaults(3));
        List<RecordingListener> listeners = new ArrayList<>();
        List<int[]> prompts = new ArrayList<>();
        for (int r = 0; r < 6; r++) {
            int[] prompt = {r + 1, r + 2};
            prompts.add(prompt);
            RecordingListener l = new RecordingListener();
            listeners.add(l);
            p.submit(request(prompt, 5), l);
        }
        for (int r = 0; r < 6; r++) {
            assertEquals(EngineFinishReason.LENGTH, listeners.get(r).ended.get(30, TimeUnit.SECONDS));
            assertEquals(ScriptedProgram.expected(prompts.get(r), 5), listeners.get(r).tokens);
            assertEquals(1, listeners.get(r).ends.get());
        }
        // Each step ran stage 0, 1, 2 in that order.
        List<String> ran = new ArrayList<>(program.ran);
        for (String entry : ran) {
            int stage = Integer.parseInt(entry.split("/")[0]);
            String batch = entry.split("/")[1];
            for (int earlier = 0; earlier < stage; earlier++) {
                assertTrue(ran.indexOf(earlier + "/" + batch) < ran.indexOf(entry), "stage " + earlier + " before " + entry + ": " + ran);
            }
        }
        assertEquals(0, p.heldRequests());
        awaitAllOutputsReleasedOnce();
        assertEquals(6, program.forgotten.size());
    }

    @Test
    void differentMicroBatchesOccupyDifferentStagesAtTheSameTime() throws Exception {
        Pipeline<SimWork, ScriptedProgram.Slot> p = pipeline(2, PipelineSettings.defaults(2).withMaxBatchSize(1));
        List<Long> firstBatch = new ArrayList<>();
        // Stage 1 of the first micro-batch holds until released.
        program.override = (stage, batch) -> {
            synchronized (firstBatch) {
                if (firstBatch.isEmpty()) {
                    firstBatch.add(batch.id());
                }
                return stage == 1 && batch.id() == firstBatch.get(0) ? SimWork.held("first-at-stage-1") : null;
            }
        };
        RecordingListener a = new RecordingListener();
        RecordingListener b = new RecordingListener();
        p.submit(request(new int[] {1}, 1), a);
        p.submit(request(new int[] {2}, 1), b);
        backend.whenStarted("first-at-stage-1").toCompletableFuture().get(30, TimeUnit.SECONDS);
        // While the first micro-batch occupies stage 1, the second one passes stage 0.
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (program.ran.stream().noneMatch(s -> s.startsWith("0/")) && System.nanoTime() < deadline) {
            Thread.onSpinWait();
        }
        assertTrue(program.ran.stream().anyMatch(s -> s.startsWith("0/")), "stage 0 ran another micro-batch while stage 1 held the first");
        assertFalse(a.ended.isDone());
        backend.release("first-at-stage-1");
        a.ended.get(30, TimeUnit.SECONDS);
        b.ended.get(30, TimeUnit.SECONDS);
    }

    @Test
    void aFailingStageFailsOnlyTheRequestsOfItsMicroBatch() throws Exception {
        Pipeline<SimWork, ScriptedProgram.Slot> p = pipeline(3, PipelineSettings.defaults(3).withMaxBatchSize(1));
        RuntimeException boom = new RuntimeException("stage 1 exploded");
        RecordingListener bad = new RecordingListener();
        RecordingListener good = new RecordingListener();
        List<Long> badBatch = new java.util.concurrent.CopyOnWriteArrayList<>();
        program.override = (stage, batch) -> {
            if (stage == 1 && batch.entries().get(0).tokens()[0] == 666) {
                badBatch.add(batch.id());
                return SimWork.failing(boom);
            }
            return null;
        };
        p.submit(request(new int[] {666}, 3), bad);
        p.submit(request(new int[] {5}, 3), good);
        ExecutionException e = assertThrows(ExecutionException.class, () -> bad.ended.get(30, TimeUnit.SECONDS));
        // The last stage never ran on bad input: it was poisoned by stage 1, and the cause names the root.
        PoisonedPreconditionException poisoned = assertInstanceOf(PoisonedPreconditionException.class, e.getCause());
        assertEquals(boom, poisoned.rootCause());
        assertTrue(poisoned.getMessage().contains("did not run because"), poisoned.getMessage());
        assertFalse(program.ran.contains("2/" + badBatch.get(0)), "the last stage never ran on the failed stage's output");
        assertEquals(EngineFinishReason.LENGTH, good.ended.get(30, TimeUnit.SECONDS));
        assertEquals(ScriptedProgram.expected(new int[] {5}, 3), good.tokens);
        awaitAllOutputsReleasedOnce();
    }

    @Test
    void aFailureInAMicroBatchOfSeveralRequestsFailsOnlyTheRequestWhoseOwnStepFails() throws Exception {
        // One micro-batch in flight at a time, up to two requests per batch: the second step holds both requests.
        Pipeline<SimWork, ScriptedProgram.Slot> p = pipeline(3, new PipelineSettings(4, 4, 2, 1));
        RuntimeException boom = new RuntimeException("token 666 is poison");
        program.override = (stage, batch) -> {
            if (stage == 0 && batch.entries().size() == 1 && batch.entries().get(0).tokens()[0] == 5) {
                return SimWork.held("healthy-first-step");
            }
            return stage == 1 && batch.entries().stream().anyMatch(e -> e.tokens()[0] == 666) ? SimWork.failing(boom) : null;
        };
        RecordingListener good = new RecordingListener();
        RecordingListener bad = new RecordingListener();
        long goodId = p.submit(request(new int[] {5}, 4), good);
        backend.whenStarted("healthy-first-step").toCompletableFuture().get(30, TimeUnit.SECONDS);
        long badId = p.submit(request(new int[] {666}, 4), bad);
        // The engine takes the second admission before the first step's end (the hold is released after it was
        // sent), so the healthy request's next step and the poisoned request's first share one micro-batch.
        backend.release("healthy-first-step");
        ExecutionException e = assertThrows(ExecutionException.class, () -> bad.ended.get(30, TimeUnit.SECONDS));
        assertEquals(boom, ((PoisonedPreconditionException) e.getCause()).rootCause());
        assertEquals(EngineFinishReason.LENGTH, good.ended.get(30, TimeUnit.SECONDS));
        assertEquals(ScriptedProgram.expected(new int[] {5}, 4), good.tokens, "the healthy request's tokens are untouched");
        // Both requests of the failed micro-batch were rewound to where that step began before running alone:
        // the healthy one after its first position, the poisoned one to its start.
        assertTrue(program.rewound.contains(badId + "@0"), program.rewound.toString());
        assertTrue(program.rewound.contains(goodId + "@1"), program.rewound.toString());
        assertEquals(2, program.rewound.size(), program.rewound.toString());
        awaitAllOutputsReleasedOnce();
    }

    @Test
    void cancellingWhileAStepIsInFlightEndsTheRequestAndPublishesNothingMore() throws Exception {
        Pipeline<SimWork, ScriptedProgram.Slot> p = pipeline(2, PipelineSettings.defaults(2));
        program.override = (stage, batch) -> stage == 0 ? SimWork.held("step") : null;
        RecordingListener l = new RecordingListener();
        long id = p.submit(request(new int[] {9}, 4), l);
        backend.whenStarted("step").toCompletableFuture().get(30, TimeUnit.SECONDS);
        p.cancel(id);
        ExecutionException e = assertThrows(ExecutionException.class, () -> l.ended.get(30, TimeUnit.SECONDS));
        assertInstanceOf(RequestCancelledException.class, e.getCause());
        // The held work still owns its outputs: nothing is freed before its exact completion.
        assertTrue(program.outputs.stream().allMatch(o -> o.releases.get() == 0), "no output released while its work runs");
        program.override = (stage, batch) -> null;
        backend.release("step");
        awaitAllOutputsReleasedOnce();
        assertEquals(List.of(), l.tokens);
        assertEquals(1, l.ends.get());
        awaitHeld(p, 0);
    }

    @Test
    void stoppingWhileAStepIsInFlightFreesItsOutputsOnceItsWorkEnded() throws Exception {
        // Found by graphlane soak (seed -5682654265596692091): the last output of a step in flight at stop was never freed.
        Pipeline<SimWork, ScriptedProgram.Slot> p = pipeline(2, PipelineSettings.defaults(2));
        program.override = (stage, batch) -> stage == 1 ? SimWork.held("last") : null;
        RecordingListener l = new RecordingListener();
        p.submit(request(new int[] {9}, 4), l);
        backend.whenStarted("last").toCompletableFuture().get(30, TimeUnit.SECONDS);
        p.stop(new IllegalStateException("stopping")).toCompletableFuture().get(30, TimeUnit.SECONDS);
        assertThrows(ExecutionException.class, () -> l.ended.get(30, TimeUnit.SECONDS));
        ScriptedProgram.Slot last = program.outputs.get(program.outputs.size() - 1);
        assertEquals(0, last.releases.get(), "the last output is freed only after the work that writes it ended");
        backend.release("last");
        awaitAllOutputsReleasedOnce();
    }

    @Test
    void aStageLaneThatStoppedFailsEveryRequestInsteadOfLeavingItWaiting() throws Exception {
        // Found by graphlane soak: steps sent to a stopped stage lane were lost and their requests never ended.
        Pipeline<SimWork, ScriptedProgram.Slot> p = pipeline(2, PipelineSettings.defaults(2));
        lanes.stop().toCompletableFuture().get(30, TimeUnit.SECONDS);
        lanes = null;
        RecordingListener l = new RecordingListener();
        p.submit(request(new int[] {9}, 4), l);
        ExecutionException e = assertThrows(ExecutionException.class, () -> l.ended.get(30, TimeUnit.SECONDS));
        assertInstanceOf(io.graphlane.actors.lane.LaneStoppedException.class, e.getCause());
        assertEquals(1, l.ends.get());
        awaitAllOutputsReleasedOnce();
        awaitHeld(p, 0);
    }

    @Test
    void aRequestPastItsDeadlineIsNeverSubmitted() throws Exception {
        Pipeline<SimWork, ScriptedProgram.Slot> p = pipeline(2, PipelineSettings.defaults(2));
        RecordingListener l = new RecordingListener();
        p.submit(new PipelineRequest(new int[] {3}, 4, -1, System.nanoTime() - 1, null), l);
        ExecutionException e = assertThrows(ExecutionException.class, () -> l.ended.get(30, TimeUnit.SECONDS));
        assertInstanceOf(RequestDeadlineExceededException.class, e.getCause());
        assertTrue(program.outputs.isEmpty(), "nothing was planned for an expired request");
    }

    @Test
    void theEndOfSequenceTokenStopsARequest() throws Exception {
        Pipeline<SimWork, ScriptedProgram.Slot> p = pipeline(1, PipelineSettings.defaults(1));
        RecordingListener l = new RecordingListener();
        int[] prompt = {4};
        int eos = ScriptedProgram.expected(prompt, 2).get(1);
        p.submit(new PipelineRequest(prompt, 10, eos, Long.MAX_VALUE, null), l);
        assertEquals(EngineFinishReason.END_OF_SEQUENCE, l.ended.get(30, TimeUnit.SECONDS));
        assertEquals(ScriptedProgram.expected(prompt, 2), l.tokens);
    }

    @Test
    void anyOfSeveralEndOfSequenceTokensStopsARequest() throws Exception {
        Pipeline<SimWork, ScriptedProgram.Slot> p = pipeline(1, PipelineSettings.defaults(1));
        RecordingListener l = new RecordingListener();
        int[] prompt = {4};
        List<Integer> expected = ScriptedProgram.expected(prompt, 3);
        // The first listed id never comes; the second is the third token generated.
        int absent = expected.stream().mapToInt(Integer::intValue).max().getAsInt() + 1;
        p.submit(new PipelineRequest(prompt, 10, new int[] {absent, expected.get(2)}, Long.MAX_VALUE, null), l);
        assertEquals(EngineFinishReason.END_OF_SEQUENCE, l.ended.get(30, TimeUnit.SECONDS));
        assertEquals(expected, l.tokens);
    }

    @Test
    void admissionBeyondActivePlusQueuedIsRefusedAtOnce() throws Exception {
        Pipeline<SimWork, ScriptedProgram.Slot> p = pipeline(1, PipelineSettings.defaults(1).withRequestLimits(1, 1));
        List<RecordingListener> held = submitTwoWithTheFirstStepHeld(p);
        RecordingListener first = held.get(0);
        RecordingListener second = held.get(1);
        PipelineOverloadedException e = assertThrows(PipelineOverloadedException.class,
                () -> p.submit(request(new int[] {3}, 1), new RecordingListener()));
        assertTrue(e.getMessage().contains("1 request is generating") && e.getMessage().contains("1 more is waiting"), e.getMessage());
        assertFalse(e.getMessage().contains("max-"), "names no setting: " + e.getMessage());
        // The engine builds the first request's work on its own thread: reset the override only once that work
        // has started, or the work may be built without the hold and "only" never starts.
        backend.whenStarted("only").toCompletableFuture().get(30, TimeUnit.SECONDS);
        program.override = (stage, batch) -> null;
        backend.release("only");
        first.ended.get(30, TimeUnit.SECONDS);
        second.ended.get(30, TimeUnit.SECONDS);
        awaitHeld(p, 0);
        RecordingListener third = new RecordingListener();
        p.submit(request(new int[] {3}, 1), third);
        third.ended.get(30, TimeUnit.SECONDS);
    }

    @Test
    void theLoadShowsRunningAndWaitingRequestsAndTheStageLaneHoldingTheStep() throws Exception {
        Pipeline<SimWork, ScriptedProgram.Slot> p = pipeline(1, PipelineSettings.defaults(1).withRequestLimits(1, 1));
        List<RecordingListener> held = submitTwoWithTheFirstStepHeld(p);
        RecordingListener first = held.get(0);
        RecordingListener second = held.get(1);
        backend.whenStarted("only").toCompletableFuture().get(30, TimeUnit.SECONDS);
        // One request holds the only active slot with its step running on the lane; the other waits for the slot.
        awaitUntil(() -> p.load().running() == 1 && p.load().waiting() == 1 && lanes.load(lanes.laneIds().get(0)).inFlight() == 1,
                () -> "running " + p.load().running() + ", waiting " + p.load().waiting() + ", lane in flight "
                        + lanes.load(lanes.laneIds().get(0)).inFlight());
        assertEquals(1, p.load().steps());
        assertEquals(0, p.load().tokens());
        program.override = (stage, batch) -> null;
        backend.release("only");
        first.ended.get(30, TimeUnit.SECONDS);
        second.ended.get(30, TimeUnit.SECONDS);
        awaitUntil(() -> p.load().running() == 0 && p.load().waiting() == 0 && p.load().tokens() == 2
                        && lanes.load(lanes.laneIds().get(0)).inFlight() == 0 && lanes.load(lanes.laneIds().get(0)).queued() == 0,
                () -> "running " + p.load().running() + ", waiting " + p.load().waiting() + ", tokens " + p.load().tokens());
        assertEquals(2, p.load().steps());
    }

    /** Submits two one-token requests to a pipeline of one active and one queued slot; the first one's step holds as "only". */
    private List<RecordingListener> submitTwoWithTheFirstStepHeld(Pipeline<SimWork, ScriptedProgram.Slot> p) {
        program.override = (stage, batch) -> SimWork.held("only");
        List<RecordingListener> listeners = List.of(new RecordingListener(), new RecordingListener());
        p.submit(request(new int[] {1}, 1), listeners.get(0));
        p.submit(request(new int[] {2}, 1), listeners.get(1));
        return listeners;
    }

    /** Polls state that other threads publish (the engine's and the lanes' loads) until {@code done}, for at most 30 s. */
    private static void awaitUntil(java.util.function.BooleanSupplier done, java.util.function.Supplier<String> state) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!done.getAsBoolean() && System.nanoTime() < deadline) {
            Thread.onSpinWait();
        }
        assertTrue(done.getAsBoolean(), state);
    }

    @Test
    void aSubmissionThatReachedAStoppedLaneIsFreedBeforeTheEngineSaysItStopped() throws Exception {
        // Found by graphlane soak (seed -4767256482042055818): the lanes were stopped while the engine still
        // submitted a step; stage 0's lane, stopping, refused its submission, but stage 1's lane had already
        // stopped, so its submission (holding stage 1's output and stage 0's as reader) went nowhere. The
        // engine stopped at once and never learnt that lane was gone: both outputs were never freed.
        TestProbe<LaneProtocol.Command> first = TESTKIT.createTestProbe();
        TestProbe<LaneProtocol.Command> second = TESTKIT.createTestProbe();
        List<LaneId> ids = List.of(LaneId.of("probe-0"), LaneId.of("probe-1"));
        program = new ScriptedProgram(2);
        Pipeline<SimWork, ScriptedProgram.Slot> p = Pipeline.start(TESTKIT.system(),
                new ProbeRegistry(Map.of(ids.get(0), first.ref(), ids.get(1), second.ref())), ids, program,
                PipelineSettings.defaults(2), "engine-" + NAMES.incrementAndGet());
        RecordingListener l = new RecordingListener();
        p.submit(request(new int[] {9}, 4), l);
        LaneProtocol.Submit<?> s0 = first.expectMessageClass(LaneProtocol.Submit.class);
        second.expectMessageClass(LaneProtocol.Submit.class);
        CompletableFuture<PipelineEngine.Stopped> stopped = p.stop(new IllegalStateException("stopping")).toCompletableFuture();
        assertThrows(ExecutionException.class, () -> l.ended.get(30, TimeUnit.SECONDS));
        // Stage 0's lane was stopping: it refuses the submission and lets go of what it retains, as a lane does.
        s0.retain().forEach(Retained::release);
        s0.replyTo().tell(new LaneProtocol.Rejected(s0.handle(), new LaneProtocol.LaneStopped(ids.get(0))));
        // Stage 1's lane had stopped before its submission arrived: nothing there answers or releases it.
        second.stop();
        stopped.get(30, TimeUnit.SECONDS);
        assertEquals(2, program.outputs.size());
        for (ScriptedProgram.Slot o : program.outputs) {
            assertEquals(1, o.releases.get(), "output of stage " + o.stage + " freed exactly once before the engine said it stopped");
        }
    }

    /** Stage lanes played by test probes, so a test decides what each lane does with what it receives. */
    private record ProbeRegistry(Map<LaneId, ActorRef<LaneProtocol.Command>> refs, AtomicLong next) implements LaneRegistry {
        ProbeRegistry(Map<LaneId, ActorRef<LaneProtocol.Command>> refs) {
            this(refs, new AtomicLong(1));
        }

        @Override
        public ActorRef<LaneProtocol.Command> lane(LaneId lane) {
            return refs.get(lane);
        }

        @Override
        public Set<LaneId> lanes() {
            return refs.keySet();
        }

        @Override
        public long reserveSequences(int count) {
            return next.getAndAdd(count);
        }

        @Override
        public long newScope() {
            return next.getAndIncrement();
        }
    }

    private void awaitAllOutputsReleasedOnce() throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (System.nanoTime() < deadline) {
            if (program.outputs.stream().allMatch(o -> o.releases.get() >= 1)) {
                break;
            }
            Thread.onSpinWait();
        }
        for (ScriptedProgram.Slot o : program.outputs) {
            assertEquals(1, o.releases.get(), "output of stage " + o.stage + " of batch " + o.batch + " released exactly once");
        }
    }

    private static void awaitHeld(Pipeline<?, ?> p, int expected) {
        awaitUntil(() -> p.heldRequests() == expected, () -> "held " + p.heldRequests() + ", expected " + expected);
    }

    /** Polls {@code condition} until it holds or {@code timeoutMillis} passed (the engine's state is read from outside). */
    private static boolean eventually(java.util.function.BooleanSupplier condition, long timeoutMillis) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                return false;
            }
            Thread.sleep(5);
        }
        return true;
    }

    @Test
    void aListenerThatThrowsFailsOnlyItsOwnRequest() throws Exception {
        Pipeline<SimWork, ScriptedProgram.Slot> p = pipeline(2, PipelineSettings.defaults(2));
        RecordingListener before = new RecordingListener();
        RecordingListener after = new RecordingListener();
        RecordingListener throwing = new RecordingListener();
        throwing.throwOnToken = 2;
        p.submit(request(new int[] {1, 2}, 6), before);
        p.submit(request(new int[] {3}, 6), throwing);
        p.submit(request(new int[] {4, 5}, 6), after);
        assertEquals(EngineFinishReason.LENGTH, before.ended.get(30, TimeUnit.SECONDS));
        assertEquals(EngineFinishReason.LENGTH, after.ended.get(30, TimeUnit.SECONDS));
        assertEquals(ScriptedProgram.expected(new int[] {1, 2}, 6), before.tokens);
        assertEquals(ScriptedProgram.expected(new int[] {4, 5}, 6), after.tokens);
        ExecutionException failed = assertThrows(ExecutionException.class, () -> throwing.ended.get(30, TimeUnit.SECONDS));
        assertInstanceOf(ListenerFailedException.class, failed.getCause());
        assertEquals(2, throwing.tokens.size(), "no token after the one its listener threw on");
        assertEquals(1, throwing.ends.get());
        assertTrue(eventually(() -> p.heldRequests() == 0, 5_000), "every admission slot is free: " + p.heldRequests());
        // The engine lives on.
        RecordingListener later = new RecordingListener();
        p.submit(request(new int[] {7}, 3), later);
        assertEquals(EngineFinishReason.LENGTH, later.ended.get(30, TimeUnit.SECONDS));
        assertFalse(p.isStopped());
    }

    @Test
    void anEngineThatFailsEndsEveryRequestItHeldAndRefusesNewOnes() throws Exception {
        Pipeline<SimWork, ScriptedProgram.Slot> p = pipeline(2, PipelineSettings.defaults(2));
        // A request that would run for a long time is still held when the short one's end hits the program's fault.
        RecordingListener longOne = new RecordingListener();
        RecordingListener shortOne = new RecordingListener();
        program.forgetFails = new IllegalStateException("a fault of the stage program");
        p.submit(request(new int[] {9}, 1_000_000), longOne);
        p.submit(request(new int[] {1, 2}, 2), shortOne);
        // The request whose end hit the fault still gets its end; the one held fails with the engine.
        assertEquals(EngineFinishReason.LENGTH, shortOne.ended.get(30, TimeUnit.SECONDS));
        ExecutionException failed = assertThrows(ExecutionException.class, () -> longOne.ended.get(30, TimeUnit.SECONDS));
        assertInstanceOf(PipelineStoppedException.class, failed.getCause());
        assertTrue(p.isStopped(), "the engine reports itself stopped before failing its requests");
        assertTrue(p.stoppedUnexpectedly());
        assertEquals(0, p.heldRequests(), "every admission slot is free");
        assertThrows(PipelineStoppedException.class, () -> p.submit(request(new int[] {3}, 2), new RecordingListener()));
    }
}
