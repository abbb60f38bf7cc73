package io.graphlane.cli.soak;

import io.graphlane.actors.lane.LaneSettings;
import io.graphlane.core.graph.GraphNode;
import io.graphlane.core.graph.LaneGraph;
import io.graphlane.core.graph.LaneId;
import io.graphlane.scheduler.graph.GraphRefusedException;
import io.graphlane.scheduler.graph.GraphResult;
import io.graphlane.scheduler.graph.GraphRun;
import io.graphlane.scheduler.graph.GraphRunner;
import io.graphlane.scheduler.graph.GraphRunnerSettings;
import io.graphlane.scheduler.graph.NodeResult;
import io.graphlane.scheduler.graph.RunOptions;
import io.graphlane.testkit.ledger.RetentionLedger;
import io.graphlane.testkit.sim.SimWork;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.pekko.actor.typed.ActorSystem;

/**
 * Random lane graphs over lane actors on the simulated device, with failing and held work,
 * retained values, cancels at every state, deadlines, device loss and lane stop; every graph
 * must end exactly once with every node terminal.
 */
final class GraphScenario {
    private final ScenarioRun run;
    private final ActorSystem<?> system;
    private final LaneSettings laneDefaults;
    private final List<CompletableFuture<GraphResult>> results = new ArrayList<>();
    private ScenarioLanes lanes;

    GraphScenario(ScenarioRun run, ActorSystem<?> system, LaneSettings laneDefaults) {
        this.run = run;
        this.system = system;
        this.laneDefaults = laneDefaults;
    }

    /** Plans, runs and checks the scenario; the ledger checks come after, in the engine. */
    void play(FaultInjector injector) {
        SplittableRandom rnd = run.random();
        int laneCount = 1 + rnd.nextInt(3);
        lanes = new ScenarioLanes(run, system, "l", laneCount, laneDefaults.withLimits(1 + rnd.nextInt(4), 4 + rnd.nextInt(40)));
        String[] names = lanes.names();
        GraphRunner<SimWork> runner = new GraphRunner<>(system, lanes.group().registry(), new GraphRunnerSettings(8, 64, 1 + rnd.nextInt(8)));

        int graphs = 1 + rnd.nextInt(3);
        for (int g = 0; g < graphs; g++) {
            planGraph(g, names, runner, rnd);
        }
        lanes.scheduleDeviceAndLaneFaults(rnd);
        injector.inject(run);

        run.driveUntil(() -> allEnded() && run.extraEnded(), "graph run");
        lanes.stopAndCheck();
        for (CompletableFuture<GraphResult> r : results) {
            if (!r.isDone()) {
                run.problem("a graph run never ended");
            }
        }
    }

    private boolean allEnded() {
        for (CompletableFuture<GraphResult> r : results) {
            if (!r.isDone()) {
                return false;
            }
        }
        return true;
    }

    private void planGraph(int g, String[] laneNames, GraphRunner<SimWork> runner, SplittableRandom rnd) {
        int n = 1 + rnd.nextInt(12);
        RetentionLedger ledger = run.ledger();
        LaneGraph.Builder<SimWork> b = LaneGraph.builder();
        for (String l : laneNames) {
            b.lane(l);
        }
        List<String> holds = new ArrayList<>();
        List<RetentionLedger.Entry> values = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            String id = "g" + g + "n" + i;
            List<String> deps = new ArrayList<>();
            for (int d = rnd.nextInt(4); d > 0 && i > 0; d--) {
                String dep = "g" + g + "n" + rnd.nextInt(i);
                if (!deps.contains(dep)) {
                    deps.add(dep);
                }
            }
            SimWork work;
            int kind = rnd.nextInt(100);
            Duration lasts = Duration.ofNanos(rnd.nextInt(50_000));
            if (kind < 30) {
                work = SimWork.lasting(lasts);
            } else if (kind < 38) {
                work = SimWork.failingAfter(lasts, new IllegalStateException(id + " fails (soak fault)"));
            } else if (kind < 45) {
                work = SimWork.instant();
            } else {
                String hold = run.holdOf(id, rnd.nextInt(100) < 10 ? new IllegalStateException(id + " fails (soak fault)") : null);
                holds.add(hold);
                work = SimWork.held(hold);
            }
            List<Object> retain = new ArrayList<>();
            for (int v = rnd.nextInt(3); v > 0; v--) {
                RetentionLedger.Entry e = ledger.acquire(id + "-v" + v);
                retain.add(e);
                values.add(e);
            }
            run.note(id + " " + work + " after " + deps + " retains " + retain.size());
            b.node(new GraphNode<>(id, LaneId.of(laneNames[rnd.nextInt(laneNames.length)]), work, deps, retain));
        }
        LaneGraph<SimWork> graph = b.build();
        RunOptions options = RunOptions.defaults();
        if (rnd.nextInt(100) < 12) {
            options = options.withDeadline(Duration.ofNanos(rnd.nextInt(300_000)));
            run.note("graph " + g + " deadline " + options.deadline().toNanos() / 1_000 + " µs after its start");
        }
        int startRound = rnd.nextInt(100) < 70 ? 0 : rnd.nextInt(5);
        int cancel = rnd.nextInt(100);
        int cancelRound = 1 + rnd.nextInt(5);
        String cancelHold = holds.isEmpty() ? null : holds.get(rnd.nextInt(holds.size()));
        RunOptions opts = options;
        CompletableFuture<GraphResult> ended = new CompletableFuture<>();
        results.add(ended);
        run.atRound(startRound, () -> {
            GraphRun started;
            try {
                started = runner.start(graph, opts);
            } catch (GraphRefusedException refused) {
                // refused before anything was sent: the values are still the caller's
                values.forEach(RetentionLedger.Entry::close);
                ended.complete(null);
                return;
            }
            AtomicInteger ends = new AtomicInteger();
            started.result().whenComplete((result, error) -> {
                if (ends.incrementAndGet() > 1) {
                    run.problem("graph " + g + " ended twice");
                }
                run.note("graph " + g + " ended: " + (error != null ? error : result + " " + result.nodes().stream()
                        .map(nr -> nr.node() + "@" + nr.lane().name() + "=" + nr.state() + nr.failure().map(f -> "(" + f.getMessage() + ")").orElse(""))
                        .toList()));
                check(g, n, result, error);
                ended.complete(result);
                run.wake();
            });
            if (cancel < 10) {
                run.note("graph " + g + " cancelled at once");
                started.cancel(); // while its nodes are queued (not yet sent or not yet submitted)
            } else if (cancel < 20) {
                run.atRound(run.round() + cancelRound, () -> {
                    run.note("graph " + g + " cancelled at round " + run.round());
                    started.cancel();
                }); // wherever the run is by then
            } else if (cancel < 32 && cancelHold != null) {
                run.whenStarted(cancelHold, () -> {
                    run.note("graph " + g + " cancelled while " + cancelHold + " runs");
                    started.cancel();
                }); // while a node's work runs
            } else if (cancel < 38) {
                ended.whenComplete((r, e) -> started.cancel()); // after completion: must change nothing
            }
        });
    }

    private void check(int g, int n, GraphResult result, Throwable error) {
        if (error != null) {
            run.problem("graph " + g + " result failed instead of reporting its nodes: " + error);
            return;
        }
        if (result.nodes().size() != n) {
            run.problem("graph " + g + " reported " + result.nodes().size() + " of its " + n + " nodes");
        }
        for (NodeResult node : result.nodes()) {
            if (!node.state().isTerminal()) {
                run.problem("graph " + g + " ended with node " + node.node() + " " + node.state());
            }
        }
    }
}
