package io.graphlane.cli.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.cli.GraphlaneCli;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

class LoadBenchTest {

    private record Run(int status, String out, String err) { }

    private static Run run(String... args) {
        CommandLine cli = GraphlaneCli.commandLine();
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        cli.setOut(new PrintWriter(out));
        cli.setErr(new PrintWriter(err));
        int status = cli.execute(args);
        return new Run(status, out.toString().trim(), err.toString().trim());
    }

    @Test
    void syntheticLoadPrintsOneJsonObjectLeavesNoLeaseAndDeletesItsCheckpoint(@TempDir Path work) throws Exception {
        Run r = run("bench", "load", "--synthetic-mb", "6", "--tensor-mb", "4", "--unit-tensors", "1",
                "--work-dir", work.toString(), "--json", "--touch");
        assertEquals(0, r.status(), r.err());
        assertTrue(r.out().matches("\\{\"bytes\":6291456,\"seconds\":[0-9.]+,\"gb_per_s\":[0-9.]+,\"raw_read_gb_per_s\":[0-9.]+,"
                + "\"ratio\":[0-9.]+,\"heap_growth_mb\":-?[0-9.]+,\"leases_open_after\":0}"), r.out());
        Matcher ratio = Pattern.compile("\"ratio\":([0-9.]+)").matcher(r.out());
        assertTrue(ratio.find());
        assertTrue(Double.parseDouble(ratio.group(1)) > 0, r.out());
        try (Stream<Path> left = Files.list(work)) {
            assertEquals(0, left.count(), "the synthetic checkpoint must be deleted afterwards");
        }
    }

    @Test
    void aBadModelDirectoryIsOneLineOnStderrWithStatusTwo(@TempDir Path empty) {
        Run r = run("bench", "load", "--model", empty.toString(), "--json");
        assertEquals(GraphlaneCli.EXIT_USER_ERROR, r.status());
        assertEquals("", r.out());
        assertEquals(1, r.err().lines().count(), r.err());
        assertTrue(r.err().contains(empty.toString()), r.err());
    }

    @Test
    void modelAndSyntheticAreMutuallyExclusive() {
        Run r = run("bench", "load", "--model", "x", "--synthetic-mb", "1");
        assertEquals(GraphlaneCli.EXIT_USER_ERROR, r.status());
        assertTrue(r.err().contains("mutually exclusive"), r.err());
    }
}
