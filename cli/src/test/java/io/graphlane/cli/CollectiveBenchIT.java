package io.graphlane.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@code bench collective --nodes 2} as a user runs it from the built jar: it starts two rank JVMs on loopback, prints one
 * JSON object whose figures agree with each other (busbw from algbw as nccl-tests defines it, ratio against the socket
 * copy measured in the same run), and leaves no rank JVM behind. Runs in the integration-test phase, after the jar is built.
 */
@Timeout(value = 4, unit = TimeUnit.MINUTES)
class CollectiveBenchIT {
    private static final Path JAR = Path.of("").toAbsolutePath().resolve("target/graphlane.jar");

    @Test
    void acrossTwoNodeJvmsItPrintsConsistentFiguresAndCleansUp() throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        Process bench = new ProcessBuilder(List.of(java, "-Xmx256m", "-jar", JAR.toString(), "bench", "collective", "--nodes", "2",
                "--mb", "1", "--runs", "2", "--warmup-seconds", "0.5", "--op", "all-reduce", "--json"))
                .redirectError(ProcessBuilder.Redirect.INHERIT).start();
        String out = new String(bench.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
        assertTrue(bench.waitFor(3, TimeUnit.MINUTES), "bench collective did not end");
        assertEquals(0, bench.exitValue(), out);
        JsonNode o = new ObjectMapper().readTree(out);
        assertEquals("all_reduce", o.get("op").asText());
        assertEquals(2, o.get("nodes").asInt());
        assertEquals("socket", o.get("transport").asText(), "the default payload plane");
        assertEquals(1 << 20, o.get("bytes").asLong());
        // Untimed runs until half a second passed, and never fewer than two.
        assertEquals(0.5, o.get("warmup_seconds").asDouble());
        assertTrue(o.get("warmup_runs").asInt() >= 2, out);
        double seconds = o.get("seconds").asDouble();
        double algbw = o.get("algbw_gb_per_s").asDouble();
        double tcp = o.get("tcp_loopback_gb_per_s").asDouble();
        assertTrue(seconds > 0 && tcp > 0, out);
        assertEquals(o.get("bytes").asDouble() / seconds / 1e9, algbw, algbw * 1e-9);
        assertEquals(algbw * 2 * (2 - 1) / 2.0, o.get("busbw_gb_per_s").asDouble(), algbw * 1e-9);
        assertEquals(o.get("busbw_gb_per_s").asDouble() / tcp, o.get("ratio").asDouble(), 1e-9);
        // The members' time per phase, summed over the ranks: an all-reduce sends, folds (reduce-scatter) and copies
        // (all-gather), so each of those is measured as some time.
        JsonNode phases = o.get("phase_ms_summed_over_ranks");
        for (String phase : List.of("send", "receive", "reduce", "wait")) {
            assertTrue(phases.get(phase).asDouble(-1) >= 0, phase + " in " + out);
        }
        assertTrue(phases.get("send").asDouble() > 0 && phases.get("reduce").asDouble() > 0 && phases.get("receive").asDouble() > 0, out);
        long left = ProcessHandle.allProcesses()
                .filter(p -> p.info().commandLine().map(c -> c.contains("collective-worker") && c.contains(JAR.toString())).orElse(false))
                .count();
        assertEquals(0, left, "rank JVMs left running after the bench ended");
    }
}
