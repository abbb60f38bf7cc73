package io.graphlane.cli.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.cli.GraphlaneCli;
import java.io.PrintWriter;
import java.io.StringWriter;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import picocli.CommandLine;

/** {@code bench cluster} refuses a layout its nodes cannot hold before it builds a pipeline or starts a node JVM. */
class ClusterBenchTest {

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', value = {
        "--nodes 3 --stages 2 --tensor-parallel 2|--nodes must be --stages x 2 = 4, got 3",
        "--nodes 4 --tensor-parallel 0|--tensor-parallel, --requests, --new-tokens and --rounds must be >= 1; got 4, 4, 0,",
        "--nodes 2 --rounds 0|must be >= 1; got 2, 2, 1, 8, 64, 0"})
    void refusesNamingTheOptionsAndTheValues(String args, String expected) {
        CommandLine cli = GraphlaneCli.commandLine();
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        cli.setOut(new PrintWriter(out));
        cli.setErr(new PrintWriter(err));
        String[] argv = ("bench cluster " + args + " --json").split(" ");
        int status = cli.execute(argv);
        assertEquals(2, status, err.toString());
        assertTrue(err.toString().contains(expected), err.toString());
        assertEquals("", out.toString());
    }
}
