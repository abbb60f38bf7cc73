package io.graphlane.scheduler.pipeline;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.actors.lane.LaneGroup;
import io.graphlane.core.completion.PoisonedPreconditionException;
import io.graphlane.core.graph.LaneId;
import io.graphlane.core.trace.TraceBuffer;
import io.graphlane.core.trace.TraceEvent;
import io.graphlane.testkit.ledger.RetentionLedger;
import io.graphlane.testkit.sim.SimBackend;
import io.graphlane.testkit.sim.SimCompletion;
import io.graphlane.testkit.sim.SimExecutor;
import io.graphlane.testkit.sim.SimWork;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Stages over several lanes (the shape of a tensor-parallel stage): each stage of a step is, per lane, a partial work,
 * then on each lane a reduce work ordered after every lane's partial; the next stage's partials order after every
 * reduce. Each work retains a ledger entry standing for the partial buffers it reads.
 */
class MultiLaneStageTest {
    private static final ActorTestKit TESTKIT = ActorTestKit.create();
    private static final AtomicInteger NAMES = new AtomicInteger();
    private static final int LANES = 2;

    private final SimBackend backend = SimBackend.create();
    private final RetentionLedger ledger = new RetentionLedger();
    private final TraceBuffer trace = new TraceBuffer(100_000);
    private LaneGroup<SimExecutor, SimCompletion, SimWork> lanes;

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

    /** Two works per lane per stage: "partial" (entries) and "reduce" (after every partial; the stage's exits). */
    private final class ShardedProgram implements StageProgram<SimWork, ScriptedProgram.Slot> {
        final ConcurrentLinkedQueue<String> ran = new ConcurrentLinkedQueue<>();
        final List<ScriptedProgram.Slot> outputs = new CopyOnWriteArrayList<>();
        final List<Long> failedBatches = new CopyOnWriteArrayList<>();
        final int stages;
        /** When a prompt starts with this token, the partial work of stage 0, lane 1 fails. */
        volatile int failingPrompt = -1;
        /** When a prompt starts with this token, stage 1 plans a work on a lane it does not have. */
        volatile int strayLanePrompt = -1;

        ShardedProgram(int stages) {
            this.stages = stages;
        }

        @Override
        public int stageCount() {
            return stages;
        }

        @Override
        public int laneCount(int stage) {
            return LANES;
        }

        @Override
        public StageStep<SimWork, ScriptedProgram.Slot> plan(int stage, MicroBatch batch, ScriptedProgram.Slot input) {
            ScriptedProgram.Slot out = new ScriptedProgram.Slot(batch.id(), stage);
            outputs.add(out);
            boolean fails = batch.entries().get(0).tokens()[0] == failingPrompt;
            if (fails && stage == 0) {
                failedBatches.add(batch.id());
            }
            List<StageStep.Submission<SimWork>> subs = new ArrayList<>();
            for (int r = 0; r < LANES; r++) {
                String name = stage + "/" + r + "/partial/" + batch.id();
                SimWork work = fails && stage == 0 && r == 1 ? SimWork.failing(new IllegalStateException("partial of lane 1 failed"))
                        : SimWork.calling(() -> ran.add(name));
                subs.add(new StageStep.Submission<>(r, work, List.of(), List.of(ledger.acquire("buffers of " + name))));
            }
            for (int r = 0; r < LANES; r++) {
                String name = stage + "/" + r + "/reduce/" + batch.id();
                subs.add(new StageStep.Submission<>(r, SimWork.calling(() -> ran.add(name)), List.of(0, 1),
                        List.of(ledger.acquire("buffers read by " + name))));
            }
            if (stage == 1 && batch.entries().get(0).tokens()[0] == strayLanePrompt) {
                subs.add(new StageStep.Submission<>(LANES, SimWork.instant(), List.of(), List.of(ledger.acquire("stray " + batch.id()))));
            }
            return new StageStep<>(subs, out);
        }

        /** The scripted tokens: {@link ScriptedProgram#next} of each request's last input token. */
        @Override
        public SampledToken[] sampledTokens(MicroBatch batch, ScriptedProgram.Slot lastOutput) {
            return new ScriptedProgram(stages).sampledTokens(batch, lastOutput);
        }

        @Override
        public void release(ScriptedProgram.Slot output) {
            output.releases.incrementAndGet();
        }

        @Override
        public void forget(long requestId) {
        }

        @Override
        public void rewind(long requestId, int position) {
        }
    }

    private ShardedProgram program;

    private Pipeline<SimWork, ScriptedProgram.Slot> pipeline(int stages) {
        List<String> names = new ArrayList<>();
        for (int k = 0; k < stages; k++) {
            for (int r = 0; r < LANES; r++) {
                names.add("stage-" + k + "-shard-" + r);
            }
        }
        lanes = LaneGroup.builder(TESTKIT.system(), backend).lanes(names.toArray(String[]::new)).trace(trace).spawn();
        List<List<LaneId>> stageLanes = new ArrayList<>();
        for (int k = 0; k < stages; k++) {
            stageLanes.add(lanes.laneIds().subList(k * LANES, (k + 1) * LANES));
        }
        program = new ShardedProgram(stages);
        return Pipeline.startMultiLane(TESTKIT.system(), lanes.registry(), stageLanes, program,
                PipelineSettings.defaults(stages).withMaxBatchSize(1), "multi-lane-" + NAMES.incrementAndGet());
    }

    private static PipelineRequest request(int[] prompt, int maxNew) {
        return new PipelineRequest(prompt, maxNew, -1, Long.MAX_VALUE, null);
    }

    @Test
    void reduceWorksRunAfterEveryLanesPartialAndTheNextStageAfterEveryReduce() throws Exception {
        Pipeline<SimWork, ScriptedProgram.Slot> p = pipeline(2);
        List<RecordingListener> listeners = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            RecordingListener l = new RecordingListener();
            listeners.add(l);
            p.submit(request(new int[] {i + 1}, 4), l);
        }
        for (int i = 0; i < 4; i++) {
            assertEquals(EngineFinishReason.LENGTH, listeners.get(i).ended.get(30, TimeUnit.SECONDS));
            assertEquals(ScriptedProgram.expected(new int[] {i + 1}, 4), listeners.get(i).tokens);
        }
        List<String> ran = new ArrayList<>(program.ran);
        for (String entry : ran) {
            String[] f = entry.split("/");
            int stage = Integer.parseInt(f[0]);
            String batch = f[3];
            List<String> before = new ArrayList<>();
            if (f[2].equals("reduce")) {
                for (int r = 0; r < LANES; r++) {
                    before.add(stage + "/" + r + "/partial/" + batch);
                }
            } else if (stage > 0) {
                for (int r = 0; r < LANES; r++) {
                    before.add((stage - 1) + "/" + r + "/reduce/" + batch);
                }
            }
            for (String b : before) {
                assertTrue(ran.indexOf(b) >= 0 && ran.indexOf(b) < ran.indexOf(entry), b + " ran before " + entry + ": " + ran);
            }
        }
        // The lane actors ordered each reduce after the other lane's partial by its handle, not by any wait in the work.
        long crossLaneWaits = trace.events().stream().filter(e -> e.kind() == TraceEvent.Kind.WAIT)
                .filter(e -> e.lane().endsWith("shard-0") && e.related().contains("shard-1")).count();
        assertTrue(crossLaneWaits > 0, "reduce works on shard 0 ordered after shard 1's handles: " + trace.events());
        assertEverythingReleasedOnce();
    }

    @Test
    void aFailingPartialFailsItsStepWithoutHangingAndReleasesEveryRetainedValueOnce() throws Exception {
        Pipeline<SimWork, ScriptedProgram.Slot> p = pipeline(2);
        program.failingPrompt = 666;
        RecordingListener bad = new RecordingListener();
        RecordingListener good = new RecordingListener();
        p.submit(request(new int[] {666}, 3), bad);
        p.submit(request(new int[] {5}, 3), good);
        ExecutionException e = assertThrows(ExecutionException.class, () -> bad.ended.get(30, TimeUnit.SECONDS));
        PoisonedPreconditionException poisoned = assertInstanceOf(PoisonedPreconditionException.class, e.getCause());
        assertEquals("partial of lane 1 failed", poisoned.rootCause().getMessage());
        long failed = program.failedBatches.get(0);
        assertTrue(program.ran.stream().noneMatch(r -> r.contains("/reduce/") && r.endsWith("/" + failed)),
                "no reduce ran on the failed partial: " + program.ran);
        assertEquals(EngineFinishReason.LENGTH, good.ended.get(30, TimeUnit.SECONDS));
        assertEquals(ScriptedProgram.expected(new int[] {5}, 3), good.tokens);
        assertEverythingReleasedOnce();
        assertFalse(ledger.entries().isEmpty());
        awaitUntil(() -> p.heldRequests() == 0);
    }

    @Test
    void stoppingWithMultiLaneStepsInFlightLetsGoOfEverythingOnce() throws Exception {
        Pipeline<SimWork, ScriptedProgram.Slot> p = pipeline(2);
        List<RecordingListener> listeners = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            RecordingListener l = new RecordingListener();
            listeners.add(l);
            p.submit(request(new int[] {i + 1}, 1000), l);
        }
        awaitUntil(() -> program.ran.size() > 20);
        p.stop(new IllegalStateException("shutting down")).toCompletableFuture().get(30, TimeUnit.SECONDS);
        for (RecordingListener l : listeners) {
            assertThrows(ExecutionException.class, () -> l.ended.get(30, TimeUnit.SECONDS));
        }
        lanes.stop().toCompletableFuture().get(30, TimeUnit.SECONDS);
        lanes = null;
        assertEverythingReleasedOnce();
    }

    @Test
    void aPlanNamingALaneItsStageLacksFailsItsStepBeforeAnythingIsSent() throws Exception {
        Pipeline<SimWork, ScriptedProgram.Slot> p = pipeline(2);
        program.strayLanePrompt = 777;
        RecordingListener bad = new RecordingListener();
        p.submit(request(new int[] {777}, 2), bad);
        ExecutionException e = assertThrows(ExecutionException.class, () -> bad.ended.get(30, TimeUnit.SECONDS));
        assertTrue(e.getCause().getMessage().contains("lane 2 of stage 1, which has 2 lane(s)"), e.getCause().getMessage());
        assertTrue(program.ran.isEmpty(), "nothing of the step was sent: " + program.ran);
        assertEverythingReleasedOnce();
    }

    @Test
    void lanesThatDoNotMatchTheProgramsLaneCountsAreRefusedAtStart() {
        lanes = LaneGroup.builder(TESTKIT.system(), backend).lanes("a", "b", "c").spawn();
        ShardedProgram twoStages = new ShardedProgram(2);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Pipeline.startMultiLane(TESTKIT.system(),
                lanes.registry(), List.of(lanes.laneIds().subList(0, 2), lanes.laneIds().subList(2, 3)), twoStages,
                PipelineSettings.defaults(2), "multi-lane-" + NAMES.incrementAndGet()));
        assertEquals("stage 1 of the stage program runs on 2 lane(s) but 1 were given", e.getMessage());
    }

    /** Every value a submission retained, and every stage output, was released exactly once. */
    private void assertEverythingReleasedOnce() throws InterruptedException {
        assertTrue(ledger.awaitSettled(Duration.ofSeconds(30)), ledger.toString());
        ledger.assertReleasedExactlyOnce();
        program.outputs.forEach(o -> assertEquals(1, o.releases.get(), "output of stage " + o.stage + " of batch " + o.batch));
    }

    private static void awaitUntil(java.util.function.BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!condition.getAsBoolean()) {
            assertTrue(System.nanoTime() < deadline, "condition not reached in 30 s");
            Thread.sleep(5);
        }
    }
}
