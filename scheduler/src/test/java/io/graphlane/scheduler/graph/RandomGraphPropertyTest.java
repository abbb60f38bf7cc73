package io.graphlane.scheduler.graph;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.actors.lane.LaneGroup;
import io.graphlane.actors.lane.LaneProtocol;
import io.graphlane.backend.cpu.CpuBackend;
import io.graphlane.backend.cpu.CpuCompletion;
import io.graphlane.backend.cpu.CpuExecutor;
import io.graphlane.backend.cpu.CpuWork;
import io.graphlane.core.graph.GraphNode;
import io.graphlane.core.graph.LaneGraph;
import io.graphlane.core.graph.LaneId;
import io.graphlane.scheduler.lane.Gate;
import io.graphlane.scheduler.lane.Tracked;
import java.time.Duration;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.Tuple;
import net.jqwik.api.lifecycle.AfterContainer;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;

/**
 * Random lane graphs with random failing nodes, their work released in random orders: every
 * node runs only after all its producers ended, runs iff no ancestor failed, a poisoned node names
 * a failed ancestor as its root, every retained value is released exactly once and never before
 * its work ended, and the lanes hold nothing once the run is over.
 */
class RandomGraphPropertyTest {
    private static final ActorTestKit KIT = ActorTestKit.create();

    @AfterContainer
    static void shutdownKit() {
        KIT.shutdownTestKit();
    }

    /** A random graph: node i on lane {@code lanes[i]}, after the nodes picked by {@code depMasks[i]} among the 6 before it. */
    record Scenario(int laneCount, List<Integer> lanes, List<Integer> depMasks, List<Boolean> fails, List<Integer> releaseOrder) {
        int size() {
            return lanes.size();
        }

        int[] producers(int i) {
            return IntStream.range(1, 7).filter(k -> i - k >= 0 && (depMasks.get(i) & (1 << (k - 1))) != 0).map(k -> i - k).toArray();
        }
    }

    @Provide
    Arbitrary<Scenario> scenarios() {
        return Arbitraries.integers().between(1, 4).flatMap(laneCount -> Arbitraries.integers().between(1, 24).flatMap(n ->
                Combinators.combine(
                        Arbitraries.integers().between(0, laneCount - 1).list().ofSize(n),
                        Arbitraries.integers().between(0, 63).list().ofSize(n),
                        Arbitraries.frequency(Tuple.of(85, false), Tuple.of(15, true)).list().ofSize(n),
                        Arbitraries.shuffle(IntStream.range(0, n).boxed().collect(Collectors.toList())))
                        .as((lanes, masks, fails, order) -> new Scenario(laneCount, lanes, masks, fails, order))));
    }

    @Property(tries = 60)
    void randomGraphsKeepOrderPoisonExactlyAndReleaseEveryValueOnce(@ForAll("scenarios") Scenario s) throws Exception {
        int n = s.size();
        try (CpuBackend backend = new CpuBackend()) {
            String[] laneNames = IntStream.range(0, s.laneCount()).mapToObj(l -> "l" + l).toArray(String[]::new);
            LaneGroup<CpuExecutor, CpuCompletion, CpuWork> lanes = LaneGroup.builder(KIT.system(), backend).lanes(laneNames).spawn();
            GraphRunner<CpuWork> runner = new GraphRunner<>(lanes);

            Gate[] gates = new Gate[n];
            Tracked[] values = new Tracked[n];
            LaneGraph.Builder<CpuWork> b = LaneGraph.builder();
            for (String l : laneNames) {
                b.lane(l);
            }
            for (int i = 0; i < n; i++) {
                gates[i] = new Gate("n" + i);
                values[i] = Tracked.heldBy(gates[i]);
                List<String> deps = IntStream.of(s.producers(i)).mapToObj(p -> "n" + p).toList();
                b.node(new GraphNode<>("n" + i, LaneId.of(laneNames[s.lanes().get(i)]), gates[i], deps, List.of(values[i])));
            }
            GraphRun run = runner.start(b.build(), RunOptions.defaults());
            for (int i : s.releaseOrder()) {
                if (s.fails().get(i)) {
                    gates[i].openFailing();
                } else {
                    gates[i].open();
                }
            }
            GraphResult result = run.result().toCompletableFuture().get(30, TimeUnit.SECONDS);

            BitSet failedAncestor = new BitSet(n); // i has an ancestor that fails on its own
            boolean anyFailure = false;
            for (int i = 0; i < n; i++) {
                for (int p : s.producers(i)) {
                    if (failedAncestor.get(p) || s.fails().get(p)) {
                        failedAncestor.set(i);
                    }
                }
                anyFailure |= s.fails().get(i);
            }
            for (int node = 0; node < n; node++) {
                final int i = node;
                NodeResult r = result.node("n" + i);
                boolean shouldRun = !failedAncestor.get(i);
                assertEquals(shouldRun, gates[i].ran(), "n" + i + " ran: " + r);
                WorkState expected = shouldRun && !s.fails().get(i) ? WorkState.COMMITTED : WorkState.FAILED;
                assertEquals(expected, r.state(), "n" + i + ": " + r);
                if (gates[i].ran()) {
                    for (int p : s.producers(i)) {
                        assertTrue(gates[i].startTick > gates[p].endTick, "n" + i + " started before its producer n" + p + " ended");
                    }
                }
                if (failedAncestor.get(i)) {
                    String root = r.rootNode().orElseThrow(() -> new AssertionError("poisoned n" + i + " names no root: " + r));
                    int rootIndex = Integer.parseInt(root.substring(1));
                    assertTrue(s.fails().get(rootIndex), "root " + root + " of n" + i + " did not fail on its own");
                    assertTrue(isAncestor(s, rootIndex, i), "root " + root + " is not an ancestor of n" + i);
                }
                assertEquals(1, values[i].closes(), "releases of n" + i + "'s retained value");
                assertFalse(values[i].releasedBeforeEnd(), "n" + i + "'s value was released while its work ran");
            }
            assertEquals(anyFailure ? RequestState.FAILED : RequestState.FINISHED, result.state());
            for (LaneId lane : lanes.laneIds()) {
                TestProbe<LaneProtocol.LaneStatus> probe = KIT.createTestProbe();
                lanes.lane(lane).tell(new LaneProtocol.GetStatus(probe.ref()));
                LaneProtocol.LaneStatus status = probe.receiveMessage(Duration.ofSeconds(10));
                assertEquals(new LaneProtocol.LaneStatus(lane, 0, 0, 0, 0, 0, false), status, "lane " + lane + " after the run");
            }
            lanes.stop().toCompletableFuture().get(30, TimeUnit.SECONDS);
        }
    }

    private static boolean isAncestor(Scenario s, int ancestor, int node) {
        List<Integer> todo = new ArrayList<>();
        for (int p : s.producers(node)) {
            todo.add(p);
        }
        BitSet seen = new BitSet();
        while (!todo.isEmpty()) {
            int p = todo.remove(todo.size() - 1);
            if (p == ancestor) {
                return true;
            }
            if (!seen.get(p)) {
                seen.set(p);
                for (int q : s.producers(p)) {
                    todo.add(q);
                }
            }
        }
        return false;
    }
}
