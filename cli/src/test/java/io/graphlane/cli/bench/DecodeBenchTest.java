package io.graphlane.cli.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.graphlane.backend.cpu.nn.CpuNeuralBackend;
import io.graphlane.cli.GraphlaneCli;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

class DecodeBenchTest {
    private static final Path FIXTURE = Path.of("..", "checkpoint", "src", "test", "resources", "tiny-llama");

    @Test
    void aCpuRunReportsTheWeightStreamingBoundMeasuredInTheSameRunAndTheRatioReached() throws Exception {
        Run run = run("bench", "decode", "--backends", "cpu", "--model", FIXTURE.toString(), "--stages", "1",
                "--requests", "2", "--new-tokens", "4", "--warmup-seconds", "0", "--json");
        assertEquals(0, run.status(), run.err());
        JsonNode result = new ObjectMapper().readTree(run.out()).get("results").get(0);
        // tiny-llama: 4 layers of hidden 64 (q 64, k and v 32, o, MLP 172, two norms), final norm, head 256 x 64, one embedding row.
        long perLayer = 64L * 64 + 2 * 64 * 32 + 64 * 64 + 3 * 64 * 172 + 2 * 64;
        assertEquals((perLayer * 4 + 64 + 256 * 64 + 64) * Float.BYTES, result.get("weight_bytes_per_token").asLong());
        double bandwidth = result.get("bandwidth_gb_per_s").asDouble();
        double limit = result.get("limit_tokens_per_s").asDouble();
        assertTrue(bandwidth > 0 && limit > 0, result.toString());
        assertEquals(result.get("decode_tokens_per_s").asDouble() / limit, result.get("limit_ratio").asDouble(), 1e-9);
        int cores = Runtime.getRuntime().availableProcessors();
        assertEquals(CpuNeuralBackend.blasThreadsFor(1, cores, CpuNeuralBackend.blasThreadsOverride()), result.get("blas_threads").asInt(),
                "the probe streams with every thread the pipeline's lanes use together");
        assertEquals(CpuNeuralBackend.blasThreadsFor(1, cores, CpuNeuralBackend.blasThreadsOverride()), CpuNeuralBackend.blasThreads(),
                "one stage: OpenBLAS keeps every core after the probe");
    }

    @Test
    void aCpuRunReportsPrefillOfALongPromptAndResidentMemoryAgainstTheWeightsAndCache() throws Exception {
        Run run = run("bench", "decode", "--backends", "cpu", "--model", FIXTURE.toString(), "--stages", "1",
                "--requests", "2", "--new-tokens", "4", "--warmup-seconds", "0", "--prompt-tokens", "40", "--json");
        assertEquals(0, run.status(), run.err());
        JsonNode result = new ObjectMapper().readTree(run.out()).get("results").get(0);
        assertEquals(40, result.get("prompt_tokens").asInt());
        assertEquals(40 / result.get("ttft_s").asDouble(), result.get("prefill_tokens_per_s").asDouble(), 1e-6);
        long perLayer = 64L * 64 + 2 * 64 * 32 + 64 * 64 + 3 * 64 * 172 + 2 * 64;
        assertEquals((perLayer * 4 + 256 * 64 * 2 + 64) * Float.BYTES, result.get("weight_bytes").asLong(),
                "tiny-llama's every F32 weight, its embedding and head once each");
        assertTrue(result.get("kv_bytes").asLong() > 0, result.toString());
        long rss = result.get("rss_bytes").asLong();
        assertTrue(rss > 0 && result.get("peak_rss_bytes").asLong() >= rss, result.toString());
        assertEquals(rss / (double) (result.get("weight_bytes").asLong() + result.get("kv_bytes").asLong()), result.get("rss_ratio").asDouble(),
                1e-9);
        Run refused = run("bench", "decode", "--backends", "cpu", "--model", FIXTURE.toString(), "--prompt-tokens", "-1");
        assertEquals(GraphlaneCli.EXIT_USER_ERROR, refused.status());
        assertTrue(refused.err().contains("--prompt-tokens must be >= 0, got -1"), refused.err());
    }

    @Test
    void oneRunMeasuresEachWeightFormatWithTheBytesThatFormatReads() throws Exception {
        Run run = run("bench", "decode", "--backends", "cpu", "--model", FIXTURE.toString(), "--stages", "1",
                "--requests", "1", "--new-tokens", "3", "--weights", "f32,q8", "--warmup-seconds", "0", "--json");
        assertEquals(0, run.status(), run.err());
        JsonNode results = new ObjectMapper().readTree(run.out()).get("results");
        assertEquals(2, results.size());
        assertEquals("f32", results.get(0).get("weights").asText());
        assertEquals("q8", results.get(1).get("weights").asText());
        long self = ProcessHandle.current().pid();
        long f32Jvm = results.get(0).get("pid").asLong();
        long q8Jvm = results.get(1).get("pid").asLong();
        assertTrue(f32Jvm != self && q8Jvm != self && f32Jvm != q8Jvm, "each format in a JVM of its own: " + results);
        // q8: q, k, v, o, gate and up as 8-bit rows of 64 quants + 2 scales (72 bytes); down (172 wide) and the rest F32
        long perLayer = 64L * 72 + 2 * 32 * 72 + 64 * 72 + 2 * 172 * 72 + 64 * 172 * Float.BYTES + 2 * 64 * Float.BYTES;
        assertEquals(perLayer * 4 + (64 + 256 * 64 + 64) * Float.BYTES, results.get(1).get("weight_bytes_per_token").asLong());
        assertTrue(results.get(1).get("decode_tokens_per_s").asDouble() > 0, results.toString());
        for (JsonNode result : results) {
            // the child JVM's split of the bound reaches this command's JSON
            assertTrue(result.get("kernel_bandwidth_gb_per_s").asDouble() > 0, result.toString());
            assertTrue(result.get("blas_bandwidth_gb_per_s").asDouble() > 0, result.toString());
            assertEquals(Math.max(result.get("kernel_bandwidth_gb_per_s_rounds").get(0).asDouble(),
                    result.get("blas_bandwidth_gb_per_s").asDouble()), result.get("bandwidth_gb_per_s").asDouble(), 0.0, result.toString());
        }
    }

    @Test
    void roundsReportTheMedianRoundAndEveryRoundsFigure() throws Exception {
        Run run = run("bench", "decode", "--backends", "cpu", "--model", FIXTURE.toString(), "--stages", "1",
                "--requests", "1", "--new-tokens", "3", "--rounds", "3", "--warmup-seconds", "0.2", "--json");
        assertEquals(0, run.status(), run.err());
        JsonNode root = new ObjectMapper().readTree(run.out());
        assertEquals(3, root.get("rounds").asInt());
        assertEquals(0.2, root.get("warmup_seconds").asDouble());
        JsonNode result = root.get("results").get(0);
        assertTrue(result.get("warmup_rounds").asInt() >= 1, "untimed rounds ran for the warm-up: " + result);
        JsonNode rounds = result.get("decode_tokens_per_s_rounds");
        assertEquals(3, rounds.size(), result.toString());
        double[] sorted = {rounds.get(0).asDouble(), rounds.get(1).asDouble(), rounds.get(2).asDouble()};
        java.util.Arrays.sort(sorted);
        assertEquals(sorted[1], result.get("decode_tokens_per_s").asDouble(), 0.0, "the median round is the one reported");
        // a probe after each round: each round's ratio is to its own probe, and the ratio reported is their median
        JsonNode limits = result.get("limit_tokens_per_s_rounds");
        JsonNode bandwidths = result.get("bandwidth_gb_per_s_rounds");
        JsonNode ratios = result.get("limit_ratio_rounds");
        assertEquals(3, limits.size(), result.toString());
        assertEquals(3, bandwidths.size(), result.toString());
        double[] sortedRatios = new double[3];
        double[] sortedLimits = new double[3];
        for (int i = 0; i < 3; i++) {
            assertTrue(bandwidths.get(i).asDouble() > 0, result.toString());
            assertEquals(rounds.get(i).asDouble() / limits.get(i).asDouble(), ratios.get(i).asDouble(), 1e-9, "round " + i);
            sortedRatios[i] = ratios.get(i).asDouble();
            sortedLimits[i] = limits.get(i).asDouble();
        }
        // each round's bound is the faster of the decode kernel's probe after that round and OpenBLAS's after the last
        JsonNode kernels = result.get("kernel_bandwidth_gb_per_s_rounds");
        double blas = result.get("blas_bandwidth_gb_per_s").asDouble();
        assertEquals(3, kernels.size(), result.toString());
        assertTrue(blas > 0, result.toString());
        double[] sortedKernels = new double[3];
        for (int i = 0; i < 3; i++) {
            assertEquals(Math.max(kernels.get(i).asDouble(), blas), bandwidths.get(i).asDouble(), 0.0, "round " + i);
            sortedKernels[i] = kernels.get(i).asDouble();
        }
        java.util.Arrays.sort(sortedKernels);
        assertEquals(sortedKernels[1], result.get("kernel_bandwidth_gb_per_s").asDouble(), 0.0);
        java.util.Arrays.sort(sortedRatios);
        java.util.Arrays.sort(sortedLimits);
        assertEquals(sortedRatios[1], result.get("limit_ratio").asDouble(), 0.0);
        assertEquals(sortedLimits[1], result.get("limit_tokens_per_s").asDouble(), 0.0);
        Run zero = run("bench", "decode", "--backends", "cpu", "--model", FIXTURE.toString(), "--rounds", "0");
        assertTrue(zero.status() != 0);
        assertTrue(zero.err().contains("--rounds must be in [1, 100], got 0"), zero.err());
        for (String bad : new String[] {"-1", "NaN", "601"}) {
            Run refused = run("bench", "decode", "--backends", "cpu", "--model", FIXTURE.toString(), "--warmup-seconds", bad);
            assertTrue(refused.status() != 0, bad);
            assertTrue(refused.err().contains("--warmup-seconds must be in [0, 600], got " + Double.parseDouble(bad)), refused.err());
        }
    }

    /**
     * With the Vector API (a JVM of its own here: this one runs without it) each round reports the share of the lane's time
     * spent in the Java kernels' calls; without it no share is reported, since F32 products then run on OpenBLAS.
     */
    @Test
    void withTheVectorApiEachRoundReportsTheKernelsShareOfTheLanesTime() throws Exception {
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xss2m",
                "--add-modules", "jdk.incubator.vector", "-cp", System.getProperty("java.class.path"), GraphlaneCli.class.getName(),
                "bench", "decode", "--backends", "cpu", "--model", FIXTURE.toString(), "--stages", "2", "--requests", "2",
                "--new-tokens", "4", "--rounds", "3", "--warmup-seconds", "0", "--json"));
        Process child = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.DISCARD).start();
        String out = new String(child.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, child.waitFor(), out);
        JsonNode result = new ObjectMapper().readTree(out).get("results").get(0);
        JsonNode shares = result.get("kernel_call_share_rounds");
        assertEquals(3, shares.size(), result.toString());
        double[] sorted = new double[3];
        for (int i = 0; i < 3; i++) {
            sorted[i] = shares.get(i).asDouble();
            assertTrue(sorted[i] > 0 && sorted[i] <= 1, "round " + i + ": " + result);
        }
        Arrays.sort(sorted);
        assertEquals(sorted[1], result.get("kernel_call_share").asDouble(), 0.0);

        Run plain = run("bench", "decode", "--backends", "cpu", "--model", FIXTURE.toString(), "--stages", "1", "--requests", "1",
                "--new-tokens", "3", "--warmup-seconds", "0", "--json");
        assertEquals(0, plain.status(), plain.err());
        JsonNode without = new ObjectMapper().readTree(plain.out()).get("results").get(0);
        assertEquals(CpuNeuralBackend.simdBits() > 0, without.has("kernel_call_share"), without.toString());
    }

    @Test
    void inProcessMeasuresEveryFormatInThisJvm() throws Exception {
        Run run = run("bench", "decode", "--backends", "cpu", "--model", FIXTURE.toString(), "--stages", "1", "--requests", "1",
                "--new-tokens", "3", "--weights", "f32,bf16", "--warmup-seconds", "0", "--in-process", "--json");
        assertEquals(0, run.status(), run.err());
        JsonNode results = new ObjectMapper().readTree(run.out()).get("results");
        assertEquals(2, results.size());
        for (JsonNode r : results) {
            assertEquals(ProcessHandle.current().pid(), r.get("pid").asLong(), r.toString());
        }
    }

    @Test
    void aFailedFormatRunEndsTheBenchWithItsStatusAndItsOneLine() {
        Run run = run("bench", "decode", "--backends", "cpu", "--model", FIXTURE.resolve("missing").toString(), "--weights", "f32,q8",
                "--warmup-seconds", "0");
        assertEquals(GraphlaneCli.EXIT_USER_ERROR, run.status(), run.err());
        assertEquals(1, run.err().strip().lines().count(), "the child's one line, no stack trace: " + run.err());
        assertTrue(run.err().contains("missing"), run.err());
        assertEquals("", run.out().strip(), "nothing measured: " + run.out());
    }

    @Test
    void anUnknownWeightFormatIsRefusedNamingTheChoices() {
        Run run = run("bench", "decode", "--backends", "cpu", "--model", FIXTURE.toString(), "--weights", "int4");
        assertTrue(run.status() != 0);
        assertTrue(run.err().contains("--weights: 'int4' is not a weight format; use one of stored, f32, bf16, q8"), run.err());
    }

    /** One command's exit status and what it printed. */
    private record Run(int status, String out, String err) {
    }

    private static Run run(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine cli = GraphlaneCli.commandLine();
        cli.setOut(new PrintWriter(out));
        cli.setErr(new PrintWriter(err));
        int status = cli.execute(args);
        return new Run(status, out.toString(), err.toString());
    }
}
