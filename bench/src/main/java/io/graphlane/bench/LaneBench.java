package io.graphlane.bench;

import io.graphlane.actors.lane.LaneGroup;
import io.graphlane.backend.cpu.CpuBackend;
import io.graphlane.backend.cpu.CpuCompletion;
import io.graphlane.backend.cpu.CpuExecutor;
import io.graphlane.backend.cpu.CpuWork;
import io.graphlane.core.graph.GraphNode;
import io.graphlane.core.graph.LaneGraph;
import io.graphlane.core.graph.LaneId;
import io.graphlane.scheduler.graph.CompiledGraph;
import io.graphlane.scheduler.graph.GraphResult;
import io.graphlane.scheduler.graph.GraphRunner;
import io.graphlane.scheduler.graph.RunOptions;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The scheduler's hot paths, per op of no-op CPU work: a graph run through lane actors (independent
 * ops on one lane; a chain alternating between two lanes, each op a cross-lane hand-over) against the
 * bare backend driven by the benchmark thread. Each invocation runs {@link #OPS} ops.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(1)
public class LaneBench {
    /** Ops per benchmark invocation. */
    public static final int OPS = 10_000;

    private ActorSystem<Void> system;
    private CpuBackend laneBackend;
    private CpuBackend bareBackend;
    private GraphRunner<CpuWork> runner;
    private CompiledGraph<CpuWork> independent;
    private CompiledGraph<CpuWork> chain;
    private List<CpuExecutor> bare;

    /** Spawns two lanes and compiles both graphs once. */
    @Setup(Level.Trial)
    public void setUp() {
        system = ActorSystem.create(Behaviors.empty(), "lane-bench");
        laneBackend = new CpuBackend("bench-lanes");
        bareBackend = new CpuBackend("bench-bare");
        LaneGroup<CpuExecutor, CpuCompletion, CpuWork> lanes = LaneGroup.builder(system, laneBackend).lanes("a", "b").spawn();
        runner = new GraphRunner<>(lanes);
        bare = bareBackend.forkExecutors(bareBackend.rootExecutor(), 2);
        LaneGraph.Builder<CpuWork> ind = LaneGraph.<CpuWork>builder().lane("a");
        LaneGraph.Builder<CpuWork> ch = LaneGraph.<CpuWork>builder().lane("a").lane("b");
        for (int i = 0; i < OPS; i++) {
            ind.node(new GraphNode<>("n" + i, LaneId.of("a"), CpuWork.NOOP, List.of(), List.of()));
            ch.node(new GraphNode<>("n" + i, LaneId.of(i % 2 == 0 ? "a" : "b"), CpuWork.NOOP,
                    i == 0 ? List.of() : List.of("n" + (i - 1)), List.of()));
        }
        independent = CompiledGraph.of(ind.build());
        chain = CompiledGraph.of(ch.build());
    }

    /** Stops the lanes, the backends and the actor system. */
    @TearDown(Level.Trial)
    public void tearDown() {
        laneBackend.close();
        bareBackend.close();
        system.terminate();
    }

    /** Independent ops on one lane through the lane actor. */
    @Benchmark
    @OperationsPerInvocation(OPS)
    public GraphResult independentThroughLaneActor() throws Exception {
        return runner.start(independent, RunOptions.defaults()).result().toCompletableFuture().get(1, TimeUnit.MINUTES);
    }

    /** The same ops submitted by this thread on the bare backend. */
    @Benchmark
    @OperationsPerInvocation(OPS)
    public CpuCompletion independentBareBackend() throws Exception {
        CpuCompletion last = null;
        for (int i = 0; i < OPS; i++) {
            last = bareBackend.submit(bare.get(0), CpuWork.NOOP);
        }
        last.awaitSuccess();
        return last;
    }

    /** A chain alternating between two lanes through the lane actors: every op a cross-lane hand-over. */
    @Benchmark
    @OperationsPerInvocation(OPS)
    public GraphResult chainThroughLaneActors() throws Exception {
        return runner.start(chain, RunOptions.defaults()).result().toCompletableFuture().get(1, TimeUnit.MINUTES);
    }

    /** The same chain driven by this thread with orderAfter on the bare backend. */
    @Benchmark
    @OperationsPerInvocation(OPS)
    public CpuCompletion chainBareBackend() throws Exception {
        CpuCompletion prev = null;
        for (int i = 0; i < OPS; i++) {
            CpuExecutor ex = bare.get(i % 2);
            if (prev != null) {
                bareBackend.orderAfter(prev, ex);
            }
            prev = bareBackend.submit(ex, CpuWork.NOOP);
        }
        prev.awaitSuccess();
        return prev;
    }
}
