package io.graphlane.scheduler.graph;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.actors.lane.DeadlineExceededException;
import io.graphlane.actors.lane.LaneGroup;
import io.graphlane.actors.lane.LaneRejectedException;
import io.graphlane.actors.lane.LaneSettings;
import io.graphlane.actors.lane.WorkCancelledException;
import io.graphlane.backend.cpu.CpuBackend;
import io.graphlane.backend.cpu.CpuCompletion;
import io.graphlane.backend.cpu.CpuExecutor;
import io.graphlane.backend.cpu.CpuWork;
import io.graphlane.core.completion.PoisonedPreconditionException;
import io.graphlane.core.graph.GraphNode;
import io.graphlane.core.graph.GraphValidationException;
import io.graphlane.core.graph.LaneGraph;
import io.graphlane.core.graph.LaneId;
import io.graphlane.scheduler.lane.Gate;
import io.graphlane.scheduler.lane.Tracked;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class GraphRunnerTest {
    private static final ActorTestKit KIT = ActorTestKit.create();

    private CpuBackend backend;
    private LaneGroup<CpuExecutor, CpuCompletion, CpuWork> lanes;
    private GraphRunner<CpuWork> runner;

    @AfterAll
    static void shutdownKit() {
        KIT.shutdownTestKit();
    }

    @BeforeEach
    void spawn() {
        backend = new CpuBackend();
        lanes = LaneGroup.builder(KIT.system(), backend).lanes("a", "b", "c").spawn();
        runner = new GraphRunner<>(lanes);
    }

    @AfterEach
    void close() {
        backend.close();
    }

    private static GraphNode<CpuWork> node(String id, String lane, CpuWork work, String... deps) {
        return new GraphNode<>(id, LaneId.of(lane), work, List.of(deps), List.of());
    }

    private static GraphResult await(java.util.concurrent.CompletionStage<GraphResult> stage) throws Exception {
        return stage.toCompletableFuture().get(20, TimeUnit.SECONDS);
    }

    @Test
    void runsADiamondAcrossLanesInDependencyOrder() throws Exception {
        Gate top = Gate.open("top");
        Gate left = Gate.open("left");
        Gate right = Gate.open("right");
        Gate bottom = Gate.open("bottom");
        LaneGraph<CpuWork> graph = LaneGraph.<CpuWork>builder().lane("a").lane("b").lane("c")
                .node(node("bottom", "a", bottom, "left", "right"))
                .node(node("top", "a", top))
                .node(node("left", "b", left, "top"))
                .node(node("right", "c", right, "top"))
                .build();
        GraphResult result = await(runner.run(graph));
        assertEquals(RequestState.FINISHED, result.state(), result.toString());
        assertEquals(4, result.count(WorkState.COMMITTED));
        assertTrue(left.startTick > top.endTick && right.startTick > top.endTick);
        assertTrue(bottom.startTick > left.endTick && bottom.startTick > right.endTick);
        assertEquals(0, runner.activeRequests());
    }

    @Test
    void failedNodePoisonsExactlyItsDependentsAndNamesTheRoot() throws Exception {
        Gate c = Gate.open("c");
        Gate d = Gate.open("d");
        LaneGraph<CpuWork> graph = LaneGraph.<CpuWork>builder().lane("a").lane("b").lane("c")
                .node(node("a", "a", Gate.open("a")))
                .node(node("b", "b", Gate.failing("b"), "a"))
                .node(node("c", "c", c, "b"))
                .node(node("c2", "a", Gate.open("c2"), "c"))
                .node(node("d", "c", d, "a"))
                .node(node("e", "b", Gate.open("e")))
                .build();
        GraphResult result = await(runner.run(graph));
        assertEquals(RequestState.FAILED, result.state());
        assertEquals(List.of("b", "c", "c2"), result.nodesIn(WorkState.FAILED));
        assertEquals(List.of("a", "d", "e"), result.nodesIn(WorkState.COMMITTED));
        NodeResult poisoned = result.node("c2");
        assertEquals("b", poisoned.rootNode().orElseThrow(), "the root of a poisoned node is the node that failed first");
        assertInstanceOf(PoisonedPreconditionException.class, poisoned.failure().orElseThrow());
        assertTrue(poisoned.failure().orElseThrow().getMessage().contains("failed on purpose"));
        assertTrue(result.node("b").rootNode().isEmpty());
        assertFalse(c.ran());
        assertTrue(d.ran());
    }

    @Test
    void cancelWhileSubmittedWaitsForTheExactCompletionAndPublishesNothingOfIt() throws Exception {
        Gate running = new Gate("running");
        Tracked held = Tracked.heldBy(running);
        Gate after = Gate.open("after");
        LaneGraph<CpuWork> graph = LaneGraph.<CpuWork>builder().lane("a").lane("b")
                .node(new GraphNode<>("running", LaneId.of("a"), running, List.of(), List.of(held)))
                .node(node("after", "b", after, "running"))
                .build();
        GraphRun run = runner.start(graph, RunOptions.defaults());
        assertTrue(running.awaitStarted());
        run.cancel();
        CompletableFuture<GraphResult> result = run.result().toCompletableFuture();
        assertThrows(java.util.concurrent.TimeoutException.class, () -> result.get(200, TimeUnit.MILLISECONDS),
                "the result must wait for the exact completion of submitted work");
        assertEquals(0, held.closes());

        running.open();
        GraphResult r = await(result);
        assertEquals(RequestState.CANCELLED, r.state());
        assertEquals(WorkState.ABANDONED, r.node("running").state());
        WorkCancelledException abandoned = assertInstanceOf(WorkCancelledException.class, r.node("running").failure().orElseThrow());
        assertTrue(abandoned.abandoned());
        // "after" is either still queued in lane b when the cancel arrives (dropped: never runs) or already handed to
        // its executor, ordered on the device after "running" (abandoned: runs, its result unpublished).
        assertEquals(WorkState.ABANDONED, r.node("after").state());
        WorkCancelledException afterCancel = assertInstanceOf(WorkCancelledException.class, r.node("after").failure().orElseThrow());
        assertEquals(afterCancel.abandoned(), after.ran(), "dropped work must never run; abandoned work ran to its completion");
        assertTrue(held.awaitClosed());
        assertEquals(1, held.closes());
        assertFalse(held.releasedBeforeEnd());
    }

    @Test
    void nodesDroppedBeforeTheyWereSentReleaseTheirRetainedValues() throws Exception {
        // Found by graphlane soak (seed -2691343689449507776): a cancel dropped unsent nodes without releasing their values.
        backend.close();
        backend = new CpuBackend();
        lanes = LaneGroup.builder(KIT.system(), backend).lanes("a").spawn();
        GraphRunner<CpuWork> oneAtATime = new GraphRunner<>(KIT.system(), lanes.registry(),
                GraphRunnerSettings.fromConfig(KIT.system().settings().config()).withMaxInFlightPerLane(1));
        Gate first = new Gate("first");
        Tracked unsentValue = new Tracked(() -> true);
        LaneGraph<CpuWork> graph = LaneGraph.<CpuWork>builder().lane("a")
                .node(node("first", "a", first))
                .node(new GraphNode<>("unsent", LaneId.of("a"), Gate.open("unsent"), List.of(), List.of(unsentValue)))
                .build();
        GraphRun run = oneAtATime.start(graph, RunOptions.defaults());
        assertTrue(first.awaitStarted());
        run.cancel(); // "unsent" waits in the runner: its lane's window holds only "first"
        first.open();
        GraphResult r = await(run.result());
        assertEquals(RequestState.CANCELLED, r.state());
        assertEquals(WorkState.ABANDONED, r.node("unsent").state());
        assertEquals(1, unsentValue.closes(), "the value of a node never sent must be released exactly once");
    }

    @Test
    void aLaneThatStoppedFailsTheRunInsteadOfLeavingItWaiting() throws Exception {
        // Found by graphlane soak: nodes sent to a lane actor that had already stopped were lost and the run never ended.
        lanes.stop().toCompletableFuture().get(20, TimeUnit.SECONDS);
        Tracked value = new Tracked(() -> true);
        LaneGraph<CpuWork> graph = LaneGraph.<CpuWork>builder().lane("a")
                .node(new GraphNode<>("late", LaneId.of("a"), Gate.open("late"), List.of(), List.of(value)))
                .build();
        GraphResult r = await(runner.start(graph, RunOptions.defaults()).result());
        assertEquals(RequestState.FAILED, r.state());
        assertInstanceOf(io.graphlane.actors.lane.LaneStoppedException.class, r.node("late").failure().orElseThrow());
        assertEquals(1, value.closes(), "the value of a node its stopped lane never took in must be released");
    }

    @Test
    void deadlineIsCheckedBeforeSubmissionAndNothingRunsAfterIt() throws Exception {
        Gate g = Gate.open("g");
        LaneGraph<CpuWork> graph = LaneGraph.<CpuWork>builder().lane("a").node(node("g", "a", g)).build();
        GraphResult r = await(runner.start(graph, RunOptions.defaults().withDeadline(Duration.ZERO)).result());
        assertEquals(RequestState.DEADLINE_EXCEEDED, r.state());
        assertInstanceOf(DeadlineExceededException.class, r.node("g").failure().orElseThrow());
        assertFalse(g.ran());
    }

    @Test
    void overloadedLaneFailsTheRequestInsteadOfHanging() throws Exception {
        backend.close();
        backend = new CpuBackend();
        lanes = LaneGroup.builder(KIT.system(), backend).lanes("a")
                .settings(LaneSettings.fromConfig(KIT.system().settings().config()).withLimits(1, 1)).spawn();
        GraphRunner<CpuWork> small = new GraphRunner<>(KIT.system(), lanes.registry(),
                GraphRunnerSettings.fromConfig(KIT.system().settings().config()).withMaxInFlightPerLane(8));
        Gate first = new Gate("first");
        LaneGraph.Builder<CpuWork> b = LaneGraph.<CpuWork>builder().lane("a").node(node("n0", "a", first));
        for (int i = 1; i < 5; i++) {
            b.node(node("n" + i, "a", Gate.open("n" + i)));
        }
        GraphRun run = small.start(b.build(), RunOptions.defaults());
        // The first node's work is held shut: the refusal must still end the request, never hang it.
        GraphResult r = await(run.result());
        first.open();
        assertEquals(RequestState.FAILED, r.state());
        LaneRejectedException refused = r.nodes().stream().map(NodeResult::failure).flatMap(java.util.Optional::stream)
                .filter(LaneRejectedException.class::isInstance).map(LaneRejectedException.class::cast).findFirst().orElseThrow();
        assertTrue(refused.getMessage().contains("overloaded"), refused.getMessage());
    }

    @Test
    void refusesRunsItCannotAdmitWithANamedReason() {
        LaneGraph<CpuWork> unknownLane = LaneGraph.<CpuWork>builder().lane("zz").node(node("x", "zz", CpuWork.NOOP)).build();
        GraphRefusedException e = assertThrows(GraphRefusedException.class, () -> runner.start(unknownLane, RunOptions.defaults()));
        assertTrue(e.getMessage().contains("unknown lane 'zz'") && e.getMessage().contains("a, b, c"), e.getMessage());

        GraphRunner<CpuWork> tiny = new GraphRunner<>(KIT.system(), lanes.registry(), new GraphRunnerSettings(1, 1, 4));
        LaneGraph<CpuWork> two = LaneGraph.<CpuWork>builder().lane("a").node(node("x", "a", CpuWork.NOOP))
                .node(node("y", "a", CpuWork.NOOP)).build();
        e = assertThrows(GraphRefusedException.class, () -> tiny.start(two, RunOptions.defaults()));
        assertTrue(e.getMessage().contains("max-nodes-per-request = 1"), e.getMessage());

        Gate hold = new Gate("hold");
        LaneGraph<CpuWork> one = LaneGraph.<CpuWork>builder().lane("a").node(node("x", "a", hold)).build();
        GraphRun active = runner.start(one, RunOptions.defaults().withRequestId(4242));
        e = assertThrows(GraphRefusedException.class, () -> runner.start(one, RunOptions.defaults().withRequestId(4242)));
        assertTrue(e.getMessage().contains("request id 4242 is already active"), e.getMessage());
        hold.open();
        assertTrue(active.result().toCompletableFuture().join().succeeded());
    }

    @Test
    void badGraphIsRefusedWithTheCycleNamed() {
        GraphValidationException e = assertThrows(GraphValidationException.class, () -> LaneGraph.<CpuWork>builder().lane("a")
                .node(node("x", "a", CpuWork.NOOP, "y")).node(node("y", "a", CpuWork.NOOP, "x")).build());
        assertTrue(e.getMessage().contains("cycle"), e.getMessage());
    }

    @Test
    void emptyGraphFinishesAtOnce() throws Exception {
        GraphResult r = await(runner.run(LaneGraph.<CpuWork>builder().lane("a").build()));
        assertEquals(RequestState.FINISHED, r.state());
    }
}
