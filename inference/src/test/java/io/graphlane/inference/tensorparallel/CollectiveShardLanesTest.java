package io.graphlane.inference.tensorparallel;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.actors.lane.LaneGroup;
import io.graphlane.actors.lane.LaneProtocol;
import io.graphlane.backend.cpu.CpuBackend;
import io.graphlane.backend.cpu.CpuCompletion;
import io.graphlane.backend.cpu.CpuExecutor;
import io.graphlane.backend.cpu.CpuWork;
import io.graphlane.backend.cpu.collective.CollectiveSettings;
import io.graphlane.backend.cpu.collective.CpuCollectiveMember;
import io.graphlane.backend.cpu.collective.InProcessTransport;
import io.graphlane.backend.cpu.nn.CpuNeuralOps;
import io.graphlane.backend.cpu.nn.CpuTensor;
import io.graphlane.core.completion.Outcome;
import io.graphlane.core.completion.PoisonedPreconditionException;
import io.graphlane.core.graph.CompletionHandle;
import io.graphlane.core.graph.LaneId;
import io.graphlane.core.trace.TraceBuffer;
import io.graphlane.core.trace.TraceEvent;
import io.graphlane.inference.llama.Segment;
import io.graphlane.inference.llama.StageInput;
import io.graphlane.inference.llama.StageOutput;
import io.graphlane.inference.model.Fixture;
import io.graphlane.inference.model.ModelDirectory;
import io.graphlane.inference.stage.StagePlan;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.FishingOutcomes;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Two ranks of a tensor-parallel stage meeting in real collectives (in-process transport), each on a compute lane and a
 * collective lane with their lane actors, as the shards of a stage on two nodes run: every collective runs on the
 * rank's collective lane and none on its compute lane, every compute work after the first orders after a collective
 * work's handle, the steps give the fixture's reference logits and greedy token; a failing partial on one rank fails
 * the step on both ranks naming it, and every step's buffers are freed once.
 */
class CollectiveShardLanesTest {
    private static final ActorTestKit TESTKIT = ActorTestKit.create();
    private static final Duration WAIT = Duration.ofSeconds(60);

    private ModelDirectory model;
    private List<TensorParallelStage<CpuTensor>> loaded;
    private CpuBackend backend;
    private LaneGroup<CpuExecutor, CpuCompletion, CpuWork> lanes;
    private TraceBuffer trace;
    private final List<CollectiveShard<CpuTensor>> ranks = new ArrayList<>();
    private final List<ShardLanes<CpuWork>.Chain> chains = new ArrayList<>();
    private final List<TestProbe<LaneProtocol.LaneReply>> replies = new ArrayList<>();
    /** Each collective as it ran: "rank op" to the thread it ran on. */
    private final List<String[]> collectives = new CopyOnWriteArrayList<>();

    @AfterAll
    static void shutdown() {
        TESTKIT.shutdownTestKit();
    }

    /** The ranks' collectives, recording the thread each one runs on. */
    private final class Recording implements ShardComm<CpuTensor> {
        private final CpuShardComm comm;

        Recording(CpuShardComm comm) {
            this.comm = comm;
        }

        @Override
        public int rank() {
            return comm.rank();
        }

        @Override
        public void allReduceSum(CpuTensor tensor) {
            collectives.add(new String[] {rank() + " allReduce", Thread.currentThread().getName()});
            comm.allReduceSum(tensor);
        }

        @Override
        public CpuTensor allGather(CpuTensor tensor) {
            collectives.add(new String[] {rank() + " allGather", Thread.currentThread().getName()});
            return comm.allGather(tensor);
        }

        @Override
        public void leave(Throwable cause) {
            comm.leave(cause);
        }
    }

    @BeforeEach
    void start() {
        model = ModelDirectory.open(Fixture.dir(""));
        loaded = TensorParallelStages.load(model, StagePlan.balanced(model.config().layerCount(), 1), 2, s -> { });
        TensorParallelism tp = new TensorParallelism(model.config(), 2);
        backend = new CpuBackend();
        trace = new TraceBuffer(1_000_000);
        lanes = LaneGroup.builder(TESTKIT.system(), backend).lanes("r0-compute", "r0-collective", "r1-compute", "r1-collective")
                .trace(trace).spawn();
        InProcessTransport transport = new InProcessTransport(2);
        for (int r = 0; r < 2; r++) {
            CpuCollectiveMember member = CpuCollectiveMember.over("test-group", r, transport, CollectiveSettings.defaults());
            LlamaShard<CpuTensor> shard = new LlamaShard<>(tp, loaded.get(0).shards().get(r).weights(), new CpuNeuralOps());
            ranks.add(new CollectiveShard<>(shard, new Recording(new CpuShardComm(member))));
            TestProbe<LaneProtocol.LaneReply> probe = TESTKIT.createTestProbe(LaneProtocol.LaneReply.class);
            replies.add(probe);
            ShardLanes<CpuWork> shardLanes = new ShardLanes<>(lanes.registry(), compute(r), collective(r), body -> body::run,
                    probe.getRef());
            chains.add(shardLanes.chain());
        }
    }

    @AfterEach
    void stop() throws Exception {
        lanes.stop().toCompletableFuture().get(30, java.util.concurrent.TimeUnit.SECONDS);
        ranks.forEach(CollectiveShard::close);
        loaded.forEach(TensorParallelStage::close);
        backend.close();
    }

    private static LaneId compute(int rank) {
        return new LaneId("r" + rank + "-compute");
    }

    private static LaneId collective(int rank) {
        return new LaneId("r" + rank + "-collective");
    }

    private String thread(LaneId lane) {
        return "graphlane-" + lanes.executor(lane).name();
    }

    /** Submits one step on both ranks (rank 0 reading {@code tokens}); returns each rank's last handle. */
    private List<CompletionHandle> step(List<Segment> segments, int[] tokens, AtomicReference<float[]> logits) {
        List<CompletionHandle> last = new ArrayList<>();
        for (int r = 0; r < 2; r++) {
            CollectiveShard<CpuTensor> rank = ranks.get(r);
            var works = r == 0
                    ? rank.plan(segments, () -> new StageInput.Tokens<>(segments, tokens), out -> take(rank, out, logits))
                    : rank.plan(segments, null, null);
            List<CompletionHandle> handles = chains.get(r).submitStep(works);
            last.add(handles.get(handles.size() - 1));
        }
        return last;
    }

    private static void take(CollectiveShard<CpuTensor> rank, StageOutput<CpuTensor> out, AtomicReference<float[]> logits) {
        try {
            float[] values = new float[rank.ops().rows(out.tensor()) * rank.ops().cols(out.tensor())];
            rank.ops().toHost(out.tensor(), values);
            logits.set(values);
        } finally {
            rank.ops().release(out.tensor());
        }
    }

    /** The outcome of {@code handle}'s work, as rank {@code rank}'s lanes answer it. */
    private Outcome outcome(int rank, CompletionHandle handle) {
        AtomicReference<Outcome> outcome = new AtomicReference<>();
        replies.get(rank).fishForMessage(WAIT, reply -> {
            reply.forEach(r -> {
                if (r instanceof LaneProtocol.Finished f && f.handle().equals(handle)) {
                    outcome.set(f.outcome());
                }
            });
            return outcome.get() != null ? FishingOutcomes.complete() : FishingOutcomes.continueAndIgnore();
        });
        return outcome.get();
    }

    private static void awaitUntil(String what, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (!condition.getAsBoolean()) {
            assertTrue(System.nanoTime() < deadline, "timed out waiting until " + what);
            Thread.sleep(10); // paces the polling only
        }
    }

    @Test
    void collectivesRunOnTheCollectiveLaneAndComputeWorksOrderAfterThemByHandle() throws Exception {
        Map<Integer, List<String>> partialThreads = new ConcurrentHashMap<>();
        for (CollectiveShard<CpuTensor> rank : ranks) {
            rank.beforePartial = (r, phase) -> partialThreads.computeIfAbsent(r, k -> new CopyOnWriteArrayList<>())
                    .add(Thread.currentThread().getName());
        }
        Fixture.Prompt p = Fixture.prompts().get(0);
        int n = p.ids().length;
        AtomicReference<float[]> logits = new AtomicReference<>();
        List<CompletionHandle> prefill = step(List.of(new Segment(1, 0, n)), p.ids(), logits);
        // The next step is submitted before the first has run: each lane's chain keeps the steps' order.
        AtomicReference<float[]> next = new AtomicReference<>();
        List<CompletionHandle> decode = step(List.of(new Segment(1, n, 1)), new int[] {p.greedy16()[0]}, next);
        for (int r = 0; r < 2; r++) {
            assertInstanceOf(Outcome.Succeeded.class, outcome(r, prefill.get(r)), "rank " + r + " prefill");
            assertInstanceOf(Outcome.Succeeded.class, outcome(r, decode.get(r)), "rank " + r + " decode");
        }
        assertArrayEquals(p.lastLogitsF32(), logits.get(), 1e-4f, "the ranks' logits are the reference's");
        assertEquals(p.greedy16()[1], Fixture.argmax(next.get()), "the decode step gives the reference's next token");

        int phases = 2 * model.config().layerCount();
        for (int r = 0; r < 2; r++) {
            String collectiveThread = thread(collective(r));
            String computeThread = thread(compute(r));
            int rank = r;
            List<String[]> own = collectives.stream().filter(c -> c[0].startsWith(rank + " ")).toList();
            assertEquals(2 * (1 + phases), own.size(), "rank " + r + ": one all-gather and " + phases + " all-reduces a step");
            for (String[] c : own) {
                assertEquals(collectiveThread, c[1], "rank " + r + "'s " + c[0] + " ran on its collective lane");
            }
            assertEquals(2 * phases, partialThreads.get(r).size());
            partialThreads.get(r).forEach(t -> assertEquals(computeThread, t, "rank " + rank + "'s partials ran on its compute lane"));
            // Every compute work waited for a collective work of its rank by handle, on the device side.
            String computeLane = compute(r).name();
            String collectiveLane = collective(r).name();
            long computeWorks = trace.events().stream().filter(e -> e.kind() == TraceEvent.Kind.WORK && e.lane().equals(computeLane))
                    .map(TraceEvent::handle).distinct().count();
            long afterCollective = trace.events().stream().filter(e -> e.kind() == TraceEvent.Kind.WAIT && e.lane().equals(computeLane)
                    && e.related().contains(collectiveLane)).map(TraceEvent::handle).distinct().count();
            assertEquals(2 * (1 + phases), computeWorks, "rank " + r + "'s compute works");
            assertEquals(computeWorks, afterCollective, "rank " + r + ": every compute work orders after a collective work");
        }
        awaitUntil("every step's buffers are freed", () -> ranks.stream().allMatch(r -> r.held().stepsHeld() == 0));
        ranks.forEach(r -> assertEquals(0, r.held().overReleases()));
    }

    @Test
    void aFailingPartialOnOneRankFailsTheStepOnEveryRankNamingItAndFreesItsBuffersOnce() throws Exception {
        RuntimeException boom = new IllegalStateException("rank 1's MLP partial failed");
        ranks.get(1).beforePartial = (rank, phase) -> {
            if (phase == 1) {
                throw boom;
            }
        };
        Fixture.Prompt p = Fixture.prompts().get(0);
        AtomicReference<float[]> logits = new AtomicReference<>();
        List<CompletionHandle> last = step(List.of(new Segment(1, 0, p.ids().length)), p.ids(), logits);

        Outcome.Failed one = assertInstanceOf(Outcome.Failed.class, outcome(1, last.get(1)));
        assertSame(boom, root(one.cause()), "rank 1 fails for its partial");
        Outcome.Failed zero = assertInstanceOf(Outcome.Failed.class, outcome(0, last.get(0)));
        String why = root(zero.cause()).getMessage();
        assertTrue(why.contains("member 1 left"), "rank 0 fails naming rank 1: " + why);
        assertTrue(logits.get() == null, "no output of a failed step");
        // Both ranks stopped at the failed phase: the collectives after it never ran.
        assertEquals(1, collectives.stream().filter(c -> c[0].equals("1 allReduce")).count(),
                "rank 1 ran the all-reduce of phase 0 only");
        awaitUntil("every step's buffers are freed", () -> ranks.stream().allMatch(r -> r.held().stepsHeld() == 0));
        ranks.forEach(r -> assertEquals(0, r.held().overReleases(), "no share of a step's buffers was released twice"));
    }

    private static Throwable root(Throwable t) {
        return t instanceof PoisonedPreconditionException p ? p.rootCause() : t;
    }
}
