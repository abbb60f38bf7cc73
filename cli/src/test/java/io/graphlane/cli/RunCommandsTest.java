package io.graphlane.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** {@code run}, {@code logits}, {@code bench pipeline} and {@code trace-html} run in-process on the fixture and the simulated backend. */
class RunCommandsTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Path FIXTURE = Path.of("..", "checkpoint", "src", "test", "resources", "tiny-llama");

    private record Run(int status, String out, String err) {
    }

    private static Run cli(String... args) {
        CommandLine cli = GraphlaneCli.commandLine();
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        cli.setOut(new PrintWriter(out));
        cli.setErr(new PrintWriter(err));
        int status = cli.execute(args);
        return new Run(status, out.toString(), err.toString());
    }

    private static JsonNode reference() throws Exception {
        return JSON.readTree(FIXTURE.resolve("reference.json").toFile()).get("prompts");
    }

    private static String ids(JsonNode array) {
        List<String> parts = new ArrayList<>();
        array.forEach(n -> parts.add(n.asText()));
        return String.join(",", parts);
    }

    @Test
    void runJsonGivesTheReferenceGreedyTokensForEveryPrompt(@TempDir Path tmp) throws Exception {
        JsonNode ref = reference();
        List<String> args = new ArrayList<>(List.of("run", "--model", FIXTURE.toString(), "--stages", "3", "--max-new-tokens", "16",
                "--temperature", "0", "--json", "--trace", tmp.resolve("t.json").toString(), "--trace-html", tmp.resolve("t.html").toString()));
        for (JsonNode p : ref) {
            args.add("--prompt-ids");
            args.add(ids(p.get("ids")));
        }
        Run run = cli(args.toArray(String[]::new));
        assertEquals(0, run.status(), run.err());
        JsonNode out = JSON.readTree(run.out());
        assertEquals(3, out.get("stages").asInt());
        assertTrue(out.get("tokens_per_s").asDouble() > 0);
        for (int i = 0; i < ref.size(); i++) {
            assertEquals(ref.get(i).get("greedy_16"), out.get("requests").get(i).get("generated_ids"), "prompt " + i);
            assertEquals(ref.get(i).get("ids"), out.get("requests").get(i).get("prompt_ids"));
        }
        // The trace has one track per stage, and the HTML timeline names every stage.
        String trace = Files.readString(tmp.resolve("t.json"));
        String html = Files.readString(tmp.resolve("t.html"));
        for (int s = 0; s < 3; s++) {
            assertTrue(trace.contains("\"lane stage-" + s + "\""), "trace track of stage " + s);
            assertTrue(html.contains("stage-" + s), "timeline row of stage " + s);
        }
    }

    @Test
    void logitsMatchTheReferenceAtEveryStageCount() throws Exception {
        JsonNode p = reference().get(0);
        for (int stages = 1; stages <= 4; stages++) {
            Run run = cli("logits", "--model", FIXTURE.toString(), "--ids", ids(p.get("ids")), "--stages", String.valueOf(stages), "--json");
            assertEquals(0, run.status(), run.err());
            JsonNode logits = JSON.readTree(run.out()).get("last_logits");
            JsonNode expected = p.get("last_logits_f32");
            assertEquals(expected.size(), logits.size());
            for (int i = 0; i < expected.size(); i++) {
                assertEquals(expected.get(i).asDouble(), logits.get(i).asDouble(), 1e-4, "logit " + i + " at " + stages + " stages");
            }
        }
    }

    @Test
    void logitsOfABf16CheckpointMatchTheBf16ReferenceInEveryWeightFormat() throws Exception {
        // The bf16 variant holds the same weights rounded to bfloat16; its reference is computed from those.
        JsonNode p = reference().get(0);
        JsonNode expected = p.get("last_logits_bf16_weights");
        for (String weights : List.of("stored", "f32", "bf16")) {
            Run run = cli("logits", "--model", FIXTURE.resolve("bf16").toString(), "--ids", ids(p.get("ids")), "--stages", "2",
                    "--weights", weights, "--json");
            assertEquals(0, run.status(), run.err());
            JsonNode logits = JSON.readTree(run.out()).get("last_logits");
            assertEquals(expected.size(), logits.size());
            for (int i = 0; i < expected.size(); i++) {
                assertEquals(expected.get(i).asDouble(), logits.get(i).asDouble(), 2e-3, "logit " + i + " with --weights " + weights);
            }
        }
    }

    @Test
    void logitsRefusesAWeightFormatItCannotHoldWithOneLine() throws Exception {
        String ids = ids(reference().get(0).get("ids"));
        Run sharded = cli("logits", "--model", FIXTURE.toString(), "--ids", ids, "--tensor-parallel", "2", "--weights", "bf16");
        assertEquals(GraphlaneCli.EXIT_USER_ERROR, sharded.status(), sharded.err());
        assertEquals(1, sharded.err().strip().lines().count(), "one line, no stack trace: " + sharded.err());
        assertTrue(sharded.err().contains("--weights bf16 is not supported with --tensor-parallel 2"), sharded.err());
        Run unknown = cli("logits", "--model", FIXTURE.toString(), "--ids", ids, "--weights", "f16");
        assertEquals(GraphlaneCli.EXIT_USER_ERROR, unknown.status(), unknown.err());
        assertEquals(1, unknown.err().strip().lines().count(), "one line, no stack trace: " + unknown.err());
        assertTrue(unknown.err().contains("--weights: 'f16' is not a weight format; use one of stored, f32, bf16, q8"), unknown.err());
    }

    @Test
    void tensorParallelLogitsMatchTheUnshardedOnes() throws Exception {
        JsonNode p = reference().get(0);
        for (int stages = 1; stages <= 2; stages++) {
            Run whole = cli("logits", "--model", FIXTURE.toString(), "--ids", ids(p.get("ids")), "--stages", String.valueOf(stages), "--json");
            Run sharded = cli("logits", "--model", FIXTURE.toString(), "--ids", ids(p.get("ids")), "--stages", String.valueOf(stages),
                    "--tensor-parallel", "2", "--json");
            assertEquals(0, whole.status(), whole.err());
            assertEquals(0, sharded.status(), sharded.err());
            JsonNode expected = JSON.readTree(whole.out()).get("last_logits");
            JsonNode out = JSON.readTree(sharded.out());
            assertEquals(2, out.get("tensor_parallel").asInt());
            JsonNode logits = out.get("last_logits");
            assertEquals(expected.size(), logits.size());
            for (int i = 0; i < expected.size(); i++) {
                assertEquals(expected.get(i).asDouble(), logits.get(i).asDouble(), 1e-4, "logit " + i + " over " + stages + " stage(s) x 2 shards");
            }
        }
        // The fixture has 2 key/value heads: 4 shards cannot split them.
        Run refused = cli("logits", "--model", FIXTURE.toString(), "--ids", ids(p.get("ids")), "--tensor-parallel", "4");
        assertEquals(GraphlaneCli.EXIT_USER_ERROR, refused.status(), refused.err());
        assertEquals(1, refused.err().strip().lines().count(), "one line, no stack trace: " + refused.err());
        assertTrue(refused.err().contains("num_key_value_heads"), refused.err());
    }

    /**
     * Past a sliding window (mistral-sliding-window: 16 positions on every layer, max_position_embeddings 256) the
     * logits still match the float64 reference, however the model is split; a prompt longer than the model allows is
     * refused naming --ids and max_position_embeddings, not the window.
     */
    @Test
    void logitsRunPastASlidingWindowUpToMaxPositionEmbeddings() throws Exception {
        Path model = Path.of("..", "inference", "src", "test", "resources", "hf-fixtures", "mistral-sliding-window");
        JsonNode reference = JSON.readTree(model.resolve("reference.json").toFile());
        double tolerance = reference.get("tolerance_rel").asDouble();
        JsonNode longest = reference.get("prompts").get(reference.get("prompts").size() - 1);
        assertTrue(longest.get("ids").size() > 16, "a prompt longer than the window");
        double most = 0;
        for (JsonNode v : longest.get("last_logits")) {
            most = Math.max(most, Math.abs(v.asDouble()));
        }
        for (String[] split : new String[][] {{"1", "1"}, {"2", "1"}, {"1", "2"}}) {
            Run run = cli("logits", "--model", model.toString(), "--ids", ids(longest.get("ids")), "--stages", split[0],
                    "--tensor-parallel", split[1], "--json");
            assertEquals(0, run.status(), run.err());
            JsonNode logits = JSON.readTree(run.out()).get("last_logits");
            for (int i = 0; i < logits.size(); i++) {
                assertEquals(longest.get("last_logits").get(i).asDouble(), logits.get(i).asDouble(), tolerance * most,
                        "logit " + i + " over " + split[0] + " stage(s) x " + split[1] + " shard(s)");
            }
        }
        String tooLong = String.join(",", java.util.Collections.nCopies(257, "7"));
        Run refused = cli("logits", "--model", model.toString(), "--ids", tooLong);
        assertEquals(GraphlaneCli.EXIT_USER_ERROR, refused.status(), refused.err());
        assertEquals(1, refused.err().strip().lines().count(), "one line, no stack trace: " + refused.err());
        assertTrue(refused.err().contains("--ids: 257 token ids are more than the model's maximum of 256 positions (max_position_embeddings"),
                refused.err());
    }

    @Test
    void badOptionsEndWithOneLineAndStatusTwo() {
        Run badIds = cli("logits", "--model", FIXTURE.toString(), "--ids", "1,x,3");
        assertEquals(GraphlaneCli.EXIT_USER_ERROR, badIds.status());
        assertTrue(badIds.err().contains("'x' is not a non-negative token id"), badIds.err());
        assertEquals(1, badIds.err().strip().lines().count(), badIds.err());
        Run tooManyStages = cli("run", "--model", FIXTURE.toString(), "--stages", "9", "--json");
        assertEquals(GraphlaneCli.EXIT_USER_ERROR, tooManyStages.status());
        assertTrue(tooManyStages.err().contains("--stages 9 is more than the model's 4 layers"), tooManyStages.err());
        Run missing = cli("run", "--model", "/nonexistent/model", "--json");
        assertEquals(GraphlaneCli.EXIT_USER_ERROR, missing.status());
        assertTrue(missing.err().contains("/nonexistent/model"), missing.err());
    }

    @Test
    void runOnTheGpuBackendWithoutAUsableGpuEndsWithOneLineSuggestingTheCpu() {
        Run run = cli("run", "--backend", "gpu", "--model", FIXTURE.toString());
        assertEquals(GraphlaneCli.EXIT_USER_ERROR, run.status(), run.err());
        assertEquals(1, run.err().strip().lines().count(), "one line, no stack trace: " + run.err());
        assertTrue(run.err().contains("--backend cpu"), run.err());
    }

    @Test
    void decodeBenchmarkWithoutAUsableGpuEndsWithOneLineSuggestingTheCpu() {
        org.junit.jupiter.api.Assumptions.assumeFalse(io.graphlane.backend.gpu.CudaLibraries.isAvailable(
                io.graphlane.backend.gpu.CudaLibrary.DRIVER), "a CUDA driver loads here");
        Run run = cli("bench", "decode", "--model", FIXTURE.toString(), "--json");
        assertEquals(GraphlaneCli.EXIT_USER_ERROR, run.status(), run.err());
        assertEquals(1, run.err().strip().lines().count(), "one line, no stack trace: " + run.err());
        assertTrue(run.err().contains("--backend cpu"), run.err());
        assertEquals("", run.out().strip(), "nothing measured: " + run.out());
    }

    @Test
    void decodeBenchmarkOnTheCpuCountsTheTokensGeneratedAfterPrefill() throws Exception {
        Run run = cli("bench", "decode", "--backends", "cpu", "--model", FIXTURE.toString(), "--stages", "2", "--requests", "3",
                "--new-tokens", "6", "--warmup-seconds", "0", "--json");
        assertEquals(0, run.status(), run.err());
        JsonNode o = JSON.readTree(run.out());
        assertEquals(1, o.get("results").size());
        JsonNode cpu = o.get("results").get(0);
        assertEquals("cpu", cpu.get("backend").asText());
        assertEquals(18, cpu.get("tokens").asInt());
        // Each request's first token comes from its prefill; at most the other 5 of each are decode tokens.
        assertTrue(cpu.get("decode_tokens").asInt() <= 15 && cpu.get("decode_tokens").asInt() > 0, run.out());
        assertTrue(cpu.get("decode_tokens_per_s").asDouble() > 0, run.out());
        Run bad = cli("bench", "decode", "--backends", "tpu", "--model", FIXTURE.toString());
        assertEquals(GraphlaneCli.EXIT_USER_ERROR, bad.status());
        assertTrue(bad.err().contains("--backends: 'tpu' is not cpu or gpu"), bad.err());
    }

    @Test
    void simulatedPipelineBenchmarkPrintsItsObject() throws Exception {
        Run run = cli("bench", "pipeline", "--backend", "sim", "--stages", "3", "--microbatches", "8", "--stage-ms", "1", "--runs", "1", "--json");
        assertEquals(0, run.status(), run.err());
        JsonNode o = JSON.readTree(run.out());
        assertEquals(3, o.get("stages").asInt());
        assertEquals(8, o.get("microbatches").asInt());
        assertEquals(10.0, o.get("ideal_ms").asDouble(), 1e-9);
        // The makespan can never beat the ideal: each stage runs its 8 steps of 1 ms one after another.
        assertTrue(o.get("makespan_ms").asDouble() >= 10.0, run.out());
        assertEquals(o.get("ideal_ms").asDouble() / o.get("makespan_ms").asDouble(), o.get("efficiency").asDouble(), 1e-9);
    }

    @Test
    void simulatedRunGeneratesTheRequestedTokens() throws Exception {
        Run run = cli("run", "--backend", "sim", "--stages", "2", "--prompt", "ab", "--prompt-ids", "1,2,3", "--max-new-tokens", "5", "--json");
        assertEquals(0, run.status(), run.err());
        JsonNode requests = JSON.readTree(run.out()).get("requests");
        assertEquals(2, requests.size());
        assertEquals(5, requests.get(0).get("generated_ids").size());
        assertEquals(JSON.readTree("[97,98]"), requests.get(0).get("prompt_ids"));
    }
}
