package io.graphlane.cli.bench;

import io.graphlane.cli.TraceOptions;
import io.graphlane.core.trace.TraceRecorder;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code graphlane bench scheduler}: the lane actors' cost against one thread driving the bare CPU backend. */
@Command(name = "scheduler",
        mixinStandardHelpOptions = true,
        description = {
            "Runs two workloads of no-op work on the CPU backend, through the lane actors (graphlane) and by one thread "
                    + "driving the bare backend (baseline), in one process, and reports ops/s and their ratio.",
            "independent: each lane runs its own stream of OPS ops. chain: OPS ops, op i on lane i mod LANES ordered "
                    + "after op i-1 (every op a cross-lane handoff); also reports the handoff time end(i-1) -> start(i)."
        })
public final class SchedulerBench implements Callable<Integer> {

    @Option(names = "--lanes", paramLabel = "LANES", defaultValue = "4", description = "Lanes (default: ${DEFAULT-VALUE}).")
    int lanes;

    @Option(names = "--ops", paramLabel = "OPS", defaultValue = "200000",
            description = "Ops per lane (independent) and in total (chain) (default: ${DEFAULT-VALUE}).")
    int ops;

    @Option(names = "--rounds", paramLabel = "N", defaultValue = "3",
            description = "Measure each path N times, interleaved; the best round of each path counts (default: ${DEFAULT-VALUE}).")
    int rounds;

    @Option(names = "--json", description = "Print one JSON object instead of a table.")
    boolean json;

    @Mixin
    TraceOptions trace;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() {
        TraceRecorder recorder = trace.recorder();
        SchedulerBenchReport report = new SchedulerBenchRunner(lanes, ops, rounds, recorder, TraceOptions.cpuWorkTracing()).run();
        var out = spec.commandLine().getOut();
        out.println(json ? report.toJson() : report.toText());
        out.flush();
        if (trace.enabled()) {
            int entries = trace.write(recorder);
            var err = spec.commandLine().getErr();
            err.println("graphlane: trace of the graphlane path written to " + trace.file() + " (" + entries
                    + " entries; figures measured with tracing on)");
            err.flush();
        }
        return 0;
    }
}
