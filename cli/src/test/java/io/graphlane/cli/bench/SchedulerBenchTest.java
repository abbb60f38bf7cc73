package io.graphlane.cli.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.cli.GraphlaneCli;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

class SchedulerBenchTest {

    private static final Pattern JSON = Pattern.compile("\\{\"lanes\":2,\"ops\":3000,"
            + "\"independent\":\\{\"graphlane_ops_per_s\":[0-9.]+,\"baseline_ops_per_s\":[0-9.]+,\"ratio\":[0-9.]+,"
            + "\"graphlane_cpu_ns_per_op\":(?:[0-9.]+|null),\"baseline_cpu_ns_per_op\":(?:[0-9.]+|null),\"cpu_ratio\":(?:[0-9.]+|null)},"
            + "\"chain\":\\{\"graphlane_ops_per_s\":[0-9.]+,\"baseline_ops_per_s\":[0-9.]+,\"ratio\":[0-9.]+,"
            + "\"graphlane_cpu_ns_per_op\":(?:[0-9.]+|null),\"baseline_cpu_ns_per_op\":(?:[0-9.]+|null),\"cpu_ratio\":(?:[0-9.]+|null),"
            + "\"handoff_p50_us\":-?[0-9.]+,\"handoff_p99_us\":-?[0-9.]+}}");

    @Test
    void printsTheJsonObjectAndWritesATraceWithLaneTracksAndHandoffArrows(@TempDir Path dir) throws Exception {
        Path trace = dir.resolve("trace.json");
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine cli = GraphlaneCli.commandLine();
        cli.setOut(new PrintWriter(out));
        cli.setErr(new PrintWriter(err));
        int status = cli.execute("bench", "scheduler", "--lanes", "2", "--ops", "3000", "--rounds", "1", "--json",
                "--trace", trace.toString());
        assertEquals(0, status, err.toString());
        String json = out.toString().trim();
        assertTrue(JSON.matcher(json).matches(), json);

        String t = Files.readString(trace);
        assertTrue(t.startsWith("{\"displayTimeUnit\":\"ns\",\"traceEvents\":["), t.substring(0, 80));
        assertTrue(t.contains("\"name\":\"lane lane-0\"") && t.contains("\"name\":\"lane lane-1\""), "one track per lane");
        assertTrue(t.contains("\"cat\":\"work\",\"ph\":\"X\""), "work slices");
        assertTrue(t.contains("\"ph\":\"s\"") && t.contains("\"ph\":\"f\",\"bp\":\"e\""), "flow arrows for cross-lane waits");
        assertTrue(err.toString().contains("trace of the graphlane path written to " + trace), err.toString());
    }

    @Test
    void cpuPerOpSumsTheRoundsAndIsReportedAsNullBelowOneClockTick() {
        // The process CPU clock advances in 10 ms ticks: a short round may read 0 CPU.
        SchedulerBenchRunner.Best best = new SchedulerBenchRunner.Best();
        best.add(new SchedulerBenchRunner.Timing(1_000_000, 0), 1000);
        assertTrue(Double.isNaN(best.cpuNanosPerOp()), "no tick yet: not measured");
        best.add(new SchedulerBenchRunner.Timing(1_000_000, 20_000_000), 1000);
        assertEquals(10_000.0, best.cpuNanosPerOp(), 1e-9, "20 ms over 2000 ops of both rounds");

        SchedulerBenchReport.Workload unmeasured = new SchedulerBenchReport.Workload(1, 1, Double.NaN, Double.NaN, Double.NaN,
                Double.NaN, Double.NaN, Double.NaN);
        String json = new SchedulerBenchReport(1, 2, unmeasured, unmeasured).toJson();
        assertTrue(json.contains("\"graphlane_cpu_ns_per_op\":null,\"baseline_cpu_ns_per_op\":null,\"cpu_ratio\":null"), json);
    }

    @Test
    void refusesABadOptionWithOneLine() {
        StringWriter err = new StringWriter();
        CommandLine cli = GraphlaneCli.commandLine();
        cli.setErr(new PrintWriter(err));
        int status = cli.execute("bench", "scheduler", "--lanes", "0");
        assertEquals(GraphlaneCli.EXIT_USER_ERROR, status);
        assertEquals("graphlane: --lanes must be >= 1, got 0", err.toString().trim());
    }
}
