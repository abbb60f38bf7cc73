package io.graphlane.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/** {@code graphlane bench ...}: benchmarks that report figures as ratios against a baseline measured in the same run. */
@Command(name = "bench",
        mixinStandardHelpOptions = true,
        description = "Benchmarks; each measures graphlane against a named baseline in the same run.",
        subcommands = {
            io.graphlane.cli.bench.SchedulerBench.class,
            io.graphlane.cli.bench.PipelineBench.class,
            io.graphlane.cli.bench.OffloadBench.class,
            io.graphlane.cli.bench.DecodeBench.class,
            io.graphlane.cli.bench.LoadBench.class,
            io.graphlane.cli.bench.CollectiveBench.class,
            io.graphlane.cli.bench.CollectiveWorker.class,
            io.graphlane.cli.bench.ClusterPipelineBench.class,
            io.graphlane.cli.bench.MoeBench.class,
        })
public final class BenchCommand implements Runnable {
    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        spec.commandLine().usage(spec.commandLine().getOut());
    }
}
