package io.graphlane.cli;

import io.graphlane.cli.soak.SoakEngine;
import io.graphlane.cli.soak.SoakReport;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code graphlane soak --scenarios N --seed S [--json]}: the seeded fault soak on the simulated device and CPU collective groups. */
@Command(name = "soak", mixinStandardHelpOptions = true,
        description = "Run N seeded fault scenarios (lane graphs, pipeline-engine workloads and materialization units on the simulated "
                + "device; CPU collective groups that lose a member) and check that nothing leaks, nothing is released early, "
                + "every request and unit ends exactly once and nothing hangs.")
public final class SoakCommand implements Callable<Integer> {

    @Option(names = "--scenarios", paramLabel = "N", defaultValue = "1000", description = "How many scenarios (default: ${DEFAULT-VALUE}).")
    int scenarios;

    @Option(names = "--seed", paramLabel = "S", defaultValue = "1",
            description = "The soak's seed (default: ${DEFAULT-VALUE}); scenario 0 has this seed, so --scenarios 1 --seed X replays scenario X.")
    long seed;

    @Option(names = "--json", description = "Print one JSON object instead of a text summary.")
    boolean json;

    @Option(names = "--verbose", description = "Print every failing scenario's seed and what it broke, and progress every 5,000 scenarios, to stderr.")
    boolean verbose;

    @Override
    public Integer call() throws Exception {
        if (scenarios < 1) {
            throw new IllegalArgumentException("--scenarios must be >= 1, got " + scenarios);
        }
        // The simulated device reports every on-purpose leak of a lost device; the soak counts them instead.
        ((ch.qos.logback.classic.Logger) org.slf4j.LoggerFactory.getLogger("io.graphlane"))
                .setLevel(ch.qos.logback.classic.Level.ERROR);
        SoakReport report;
        try (SoakEngine engine = new SoakEngine(SoakEngine.Options.defaults())) {
            long start = System.nanoTime();
            int[] done = {0};
            report = engine.run(scenarios, seed, r -> {
                if (verbose && ++done[0] % 5_000 == 0) {
                    System.err.printf(java.util.Locale.ROOT, "%d scenarios, %.1f s%n", done[0], (System.nanoTime() - start) / 1e9);
                }
                if (verbose && r.failed()) {
                    System.err.println("scenario seed " + r.seed() + " (" + r.kind() + ") failed:");
                    r.problems().forEach(p -> System.err.println("  " + p));
                    r.notes().forEach(n -> System.err.println("  note: " + n));
                }
            });
        }
        System.out.print(json ? report.toJson() + "\n" : report.toText());
        return report.clean() ? 0 : 1;
    }
}
