package io.graphlane.cli.bench;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.graphlane.actors.lane.LaneGroup;
import io.graphlane.actors.lane.LaneSettings;
import io.graphlane.actors.lane.WorkTracing;
import io.graphlane.backend.cpu.CpuBackend;
import io.graphlane.backend.cpu.CpuCompletion;
import io.graphlane.backend.cpu.CpuExecutor;
import io.graphlane.backend.cpu.CpuWork;
import io.graphlane.core.GraphlaneException;
import io.graphlane.core.graph.GraphNode;
import io.graphlane.core.graph.LaneGraph;
import io.graphlane.core.graph.LaneId;
import io.graphlane.core.trace.TraceRecorder;
import io.graphlane.scheduler.graph.CompiledGraph;
import io.graphlane.scheduler.graph.GraphResult;
import io.graphlane.scheduler.graph.GraphRunner;
import io.graphlane.scheduler.graph.GraphRunnerSettings;
import io.graphlane.scheduler.graph.RunOptions;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;

/**
 * Runs the two scheduler workloads both ways on the CPU backend: through lane actors and a
 * {@link GraphRunner} (graphlane), and by this thread calling {@code submit} / {@code orderAfter} on
 * the bare backend (the baseline). Graphs and work items are built before the clock starts, for
 * both paths alike; each path runs a short warm-up of the same shape first.
 */
public final class SchedulerBenchRunner {
    private final int lanes;
    private final int ops;
    private final int rounds;
    private final TraceRecorder trace;
    private final WorkTracing<CpuWork> workTracing;

    /**
     * A runner for {@code lanes} lanes and {@code ops} ops, measuring each path {@code rounds} times (interleaved,
     * the best round of each path counts), tracing the graphlane path into {@code trace}.
     */
    public SchedulerBenchRunner(int lanes, int ops, int rounds, TraceRecorder trace, WorkTracing<CpuWork> workTracing) {
        if (rounds < 1) {
            throw new IllegalArgumentException("--rounds must be >= 1, got " + rounds);
        }
        if (lanes < 1) {
            throw new IllegalArgumentException("--lanes must be >= 1, got " + lanes);
        }
        if (ops < 2) {
            throw new IllegalArgumentException("--ops must be >= 2, got " + ops);
        }
        if ((long) lanes * ops > 50_000_000L) {
            throw new IllegalArgumentException("--lanes x --ops must be <= 50,000,000, got " + ((long) lanes * ops));
        }
        this.lanes = lanes;
        this.ops = ops;
        this.rounds = rounds;
        this.trace = trace;
        this.workTracing = workTracing;
    }

    /** Measures both workloads both ways and returns the figures. */
    public SchedulerBenchReport run() {
        Config config = ConfigFactory.parseString("pekko.loglevel = WARNING\npekko.stdout-loglevel = WARNING\n"
                + "pekko.log-dead-letters = off\npekko.log-dead-letters-during-shutdown = off").withFallback(ConfigFactory.load());
        ActorSystem<Void> system = ActorSystem.create(Behaviors.empty(), "graphlane-bench", config);
        CpuBackend laneBackend = new CpuBackend("cpu-lanes");
        CpuBackend bareBackend = new CpuBackend("cpu-bare");
        try {
            LaneSettings laneSettings = LaneSettings.fromConfig(config);
            LaneGroup<CpuExecutor, CpuCompletion, CpuWork> group = LaneGroup.builder(system, laneBackend)
                    .lanes(laneNames()).settings(laneSettings).trace(trace).workTracing(workTracing).spawn();
            GraphRunner<CpuWork> runner = new GraphRunner<>(system, group.registry(), GraphRunnerSettings.fromConfig(config));
            List<CpuExecutor> bare = bareBackend.forkExecutors(bareBackend.rootExecutor(), lanes);

            int warm = Math.max(2, Math.min(ops, 20_000));
            // Warm-up, both paths, both shapes.
            baselineIndependent(bareBackend, bare, warm);
            graphlane(runner, independentGraph(warm, CpuWork.NOOP));
            baselineChain(bareBackend, bare, new Stamps(warm));
            graphlane(runner, chainGraph(new Stamps(warm)));

            // Rounds interleave the two paths so that both see the same machine; the best round of each counts,
            // for wall time and for the process CPU time it took, each on its own.
            CompiledGraph<CpuWork> independent = independentGraph(ops, CpuWork.NOOP);
            long independentOps = (long) lanes * ops;
            Best baseIndependent = new Best();
            Best glIndependent = new Best();
            for (int r = 0; r < rounds; r++) {
                baseIndependent.add(Timing.of(() -> baselineIndependent(bareBackend, bare, ops)), independentOps);
                glIndependent.add(Timing.of(() -> graphlane(runner, independent)), independentOps);
            }
            Best baseChain = new Best();
            Best glChain = new Best();
            double[] glHandoff = new double[0];
            double[] baseHandoff = new double[0];
            for (int r = 0; r < rounds; r++) {
                Stamps baseStamps = new Stamps(ops);
                if (baseChain.add(Timing.of(() -> baselineChain(bareBackend, bare, baseStamps)), ops)) {
                    baseHandoff = baseStamps.handoffMicros();
                }
                Stamps glStamps = new Stamps(ops);
                CompiledGraph<CpuWork> chain = chainGraph(glStamps);
                if (glChain.add(Timing.of(() -> graphlane(runner, chain)), ops)) {
                    glHandoff = glStamps.handoffMicros();
                }
            }
            group.stop().toCompletableFuture().get(60, TimeUnit.SECONDS);
            return new SchedulerBenchReport(lanes, ops,
                    new SchedulerBenchReport.Workload(glIndependent.opsPerSecond, baseIndependent.opsPerSecond, glIndependent.cpuNanosPerOp(),
                            baseIndependent.cpuNanosPerOp(), Double.NaN, Double.NaN, Double.NaN, Double.NaN),
                    new SchedulerBenchReport.Workload(glChain.opsPerSecond, baseChain.opsPerSecond, glChain.cpuNanosPerOp(),
                            baseChain.cpuNanosPerOp(), percentile(glHandoff, 0.50), percentile(glHandoff, 0.99),
                            percentile(baseHandoff, 0.50), percentile(baseHandoff, 0.99)));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new GraphlaneException("bench scheduler interrupted", e);
        } catch (ExecutionException | TimeoutException e) {
            throw new GraphlaneException("bench scheduler: lanes did not stop: " + e.getMessage(), e);
        } finally {
            laneBackend.close();
            bareBackend.close();
            system.terminate();
        }
    }

    private String[] laneNames() {
        String[] names = new String[lanes];
        for (int l = 0; l < lanes; l++) {
            names[l] = "lane-" + l;
        }
        return names;
    }

    /** The baseline of {@code independent}: round-robin submits of no-op work, then a wait for each lane's last op. */
    private void baselineIndependent(CpuBackend backend, List<CpuExecutor> executors, int perLane) throws InterruptedException {
        CpuCompletion[] last = new CpuCompletion[lanes];
        for (int k = 0; k < perLane; k++) {
            for (int l = 0; l < lanes; l++) {
                last[l] = backend.submit(executors.get(l), CpuWork.NOOP);
            }
        }
        for (CpuCompletion c : last) {
            c.awaitSuccess();
        }
    }

    /** The baseline of {@code chain}: op i on lane i mod lanes, ordered after op i-1, then a wait for the last. */
    private void baselineChain(CpuBackend backend, List<CpuExecutor> executors, Stamps stamps) throws InterruptedException {
        CpuWork[] work = stamps.work();
        CpuCompletion prev = null;
        for (int i = 0; i < work.length; i++) {
            CpuExecutor ex = executors.get(i % lanes);
            if (prev != null) {
                backend.orderAfter(prev, ex);
            }
            prev = backend.submit(ex, work[i]);
        }
        prev.awaitSuccess();
    }

    private void graphlane(GraphRunner<CpuWork> runner, CompiledGraph<CpuWork> graph) throws InterruptedException {
        GraphResult result;
        try {
            result = runner.start(graph, RunOptions.defaults()).result().toCompletableFuture().get(10, TimeUnit.MINUTES);
        } catch (ExecutionException | TimeoutException e) {
            throw new GraphlaneException("bench scheduler: the graphlane run did not complete: " + e, e);
        }
        if (!result.succeeded()) {
            throw new GraphlaneException("bench scheduler: the graphlane run ended " + result);
        }
    }

    private CompiledGraph<CpuWork> independentGraph(int perLane, CpuWork work) {
        LaneGraph.Builder<CpuWork> b = LaneGraph.builder();
        List<LaneId> ids = new ArrayList<>();
        for (String name : laneNames()) {
            LaneId id = LaneId.of(name);
            ids.add(id);
            b.lane(id);
        }
        int n = 0;
        for (int k = 0; k < perLane; k++) {
            for (int l = 0; l < lanes; l++) {
                b.node(new GraphNode<>(Integer.toString(n++), ids.get(l), work, List.of(), List.of()));
            }
        }
        return CompiledGraph.of(b.build());
    }

    private CompiledGraph<CpuWork> chainGraph(Stamps stamps) {
        LaneGraph.Builder<CpuWork> b = LaneGraph.builder();
        List<LaneId> ids = new ArrayList<>();
        for (String name : laneNames()) {
            LaneId id = LaneId.of(name);
            ids.add(id);
            b.lane(id);
        }
        CpuWork[] work = stamps.work();
        for (int i = 0; i < work.length; i++) {
            b.node(new GraphNode<>(Integer.toString(i), ids.get(i % lanes), work[i],
                    i == 0 ? List.of() : List.of(Integer.toString(i - 1)), List.of()));
        }
        return CompiledGraph.of(b.build());
    }

    /** One measured run: its wall time and the CPU time the whole process spent meanwhile (every thread: callers, actors, workers). */
    record Timing(long wallNanos, long cpuNanos) {
        interface Run {
            void run() throws InterruptedException;
        }

        static Timing of(Run run) throws InterruptedException {
            // The garbage of what ran before (the graph just built, the other path's round) is collected now, not on the
            // clock of this round: each path pays for the collection of its own allocations only.
            System.gc();
            long cpu0 = processCpuNanos();
            long t0 = System.nanoTime();
            run.run();
            long wall = System.nanoTime() - t0;
            return new Timing(wall, processCpuNanos() - cpu0);
        }

        private static long processCpuNanos() {
            if (ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.OperatingSystemMXBean os) {
                long cpu = os.getProcessCpuTime();
                if (cpu >= 0) {
                    return cpu;
                }
            }
            throw new GraphlaneException("bench scheduler: this JVM does not report process CPU time");
        }
    }

    /**
     * One path over its rounds: the best rate, and the CPU per op over all rounds together. The process CPU clock
     * advances in scheduler ticks (10 ms on Linux), so one short round may read 0; summing the rounds gives the
     * finest figure the clock allows, and a total still below one tick is reported as not measured (NaN).
     */
    static final class Best {
        /** The process CPU clock's resolution on Linux; below it a reading is noise. */
        private static final long CPU_CLOCK_TICK_NANOS = 10_000_000L;

        double opsPerSecond;
        private long cpuNanos;
        private long ops;

        /** Takes one round of {@code roundOps} ops; true when its rate is the best so far. */
        boolean add(Timing t, long roundOps) {
            cpuNanos += t.cpuNanos();
            ops += roundOps;
            double rate = roundOps / (t.wallNanos() / 1e9);
            if (rate > opsPerSecond) {
                opsPerSecond = rate;
                return true;
            }
            return false;
        }

        /** Process CPU time per op over every round, or NaN when the rounds took less CPU than one clock tick. */
        double cpuNanosPerOp() {
            return cpuNanos < CPU_CLOCK_TICK_NANOS ? Double.NaN : (double) cpuNanos / ops;
        }
    }

    /** The value at quantile {@code q} of sorted {@code values}; NaN when empty. */
    static double percentile(double[] values, double q) {
        if (values.length == 0) {
            return Double.NaN;
        }
        int i = (int) Math.ceil(q * values.length) - 1;
        return values[Math.max(0, Math.min(values.length - 1, i))];
    }

    /** No-op chain work that notes when each op starts and ends on its worker thread. */
    static final class Stamps {
        private final long[] start;
        private final long[] end;
        private final CpuWork[] work;

        Stamps(int n) {
            start = new long[n];
            end = new long[n];
            work = new CpuWork[n];
            for (int i = 0; i < n; i++) {
                int op = i;
                work[i] = () -> {
                    start[op] = System.nanoTime();
                    end[op] = System.nanoTime();
                };
            }
        }

        CpuWork[] work() {
            return work;
        }

        /** start(i) - end(i-1) for every op after the first, in microseconds, sorted. */
        double[] handoffMicros() {
            double[] h = new double[start.length - 1];
            for (int i = 1; i < start.length; i++) {
                h[i - 1] = (start[i] - end[i - 1]) / 1000.0;
            }
            Arrays.sort(h);
            return h;
        }
    }
}
