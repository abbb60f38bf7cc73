package io.graphlane.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import picocli.CommandLine;

/** {@code bench collective --json} prints the nccl-tests figures, with busbw derived from algbw as nccl-tests defines it. */
class CollectiveBenchTest {

    @ParameterizedTest(name = "{0} over {1}")
    @CsvSource({"all-reduce,3,2.0", "all-gather,3,1.0", "all-to-all,2,1.0"})
    void printsAlgbwBusbwAndTheBaselineRatio(String op, int members, double busFactorTimesN) throws Exception {
        CommandLine cli = GraphlaneCli.commandLine();
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        cli.setOut(new PrintWriter(out));
        cli.setErr(new PrintWriter(err));
        int status = cli.execute("bench", "collective", "--op", op, "--mb", "1", "--members", String.valueOf(members), "--runs", "1",
                "--warmup-seconds", "0", "--json");
        assertEquals(0, status, err.toString());
        JsonNode o = new ObjectMapper().readTree(out.toString());
        assertEquals(op.replace('-', '_'), o.get("op").asText());
        assertEquals(members, o.get("members").asInt());
        assertEquals(1, o.get("runs").asInt());
        assertEquals(0.0, o.get("warmup_seconds").asDouble());
        double algbw = o.get("algbw_gb_per_s").asDouble();
        assertTrue(algbw > 0, out.toString());
        assertEquals(o.get("bytes").asDouble() / o.get("seconds").asDouble() / 1e9, algbw, algbw * 1e-9);
        assertEquals(algbw * busFactorTimesN * (members - 1) / members, o.get("busbw_gb_per_s").asDouble(), algbw * 1e-9);
        assertEquals(o.get("busbw_gb_per_s").asDouble() / o.get("memcpy_two_threads_gb_per_s").asDouble(), o.get("ratio").asDouble(), 1e-9);
    }

    /** An unknown payload plane is refused by name before any rank JVM starts. */
    @Test
    void refusesAnUnknownPayloadPlane() {
        CommandLine cli = GraphlaneCli.commandLine();
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        cli.setOut(new PrintWriter(out));
        cli.setErr(new PrintWriter(err));
        int status = cli.execute("bench", "collective", "--nodes", "2", "--payload", "pigeon", "--json");
        assertTrue(status != 0, out.toString());
        assertTrue(err.toString().contains("--payload must be socket or artery, got 'pigeon'"), err.toString());
        assertEquals("", out.toString());
    }

    /** A warm-up that is negative or not a number is refused by name, before anything runs. */
    @Test
    void refusesAWarmupOutsideItsRange() {
        for (String bad : List.of("-1", "NaN", "601")) {
            CommandLine cli = GraphlaneCli.commandLine();
            StringWriter out = new StringWriter();
            StringWriter err = new StringWriter();
            cli.setOut(new PrintWriter(out));
            cli.setErr(new PrintWriter(err));
            int status = cli.execute("bench", "collective", "--nodes", "2", "--warmup-seconds", bad, "--json");
            assertTrue(status != 0, out.toString());
            assertTrue(err.toString().contains("--warmup-seconds must be in [0, 600], got "), bad + ": " + err);
            assertEquals("", out.toString());
        }
    }
}
