package io.graphlane.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/**
 * {@code run --expert-parallel} on the Mixtral fixture gives the reference's greedy tokens; a size that does not divide the
 * experts, or a dense model, is refused in one line; {@code bench moe --json} reports each expert-parallel size against
 * the single lane with the same tokens.
 */
class MoeCommandsTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Path MIXTRAL = Path.of("..", "inference", "src", "test", "resources", "hf-fixtures", "mixtral");
    private static final Path DENSE = Path.of("..", "inference", "src", "test", "resources", "hf-fixtures", "qwen3");

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

    private static void assertOneLineRefusal(Run run, String... fragments) {
        assertEquals(GraphlaneCli.EXIT_USER_ERROR, run.status(), run.out() + run.err());
        String err = run.err().strip();
        assertEquals(1, err.lines().count(), "exactly one line on stderr: " + err);
        assertFalse(err.contains("\tat "), "no stack trace: " + err);
        for (String f : fragments) {
            assertTrue(err.contains(f), "expected '" + f + "' in: " + err);
        }
    }

    @Test
    void runWithExpertLanesGivesTheReferenceGreedyTokens() throws Exception {
        JsonNode prompts = JSON.readTree(MIXTRAL.resolve("reference.json").toFile()).get("prompts");
        List<String> args = new ArrayList<>(List.of("run", "--model", MIXTRAL.toString(), "--stages", "2", "--expert-parallel", "4",
                "--max-new-tokens", "8", "--temperature", "0", "--json"));
        for (JsonNode p : prompts) {
            List<String> ids = new ArrayList<>();
            p.get("ids").forEach(n -> ids.add(n.asText()));
            args.add("--prompt-ids");
            args.add(String.join(",", ids));
        }
        Run run = cli(args.toArray(String[]::new));
        assertEquals(0, run.status(), run.err());
        JsonNode out = JSON.readTree(run.out());
        assertEquals(4, out.get("expert_parallel").asInt());
        assertEquals(prompts.size(), out.get("requests").size());
        for (int i = 0; i < prompts.size(); i++) {
            assertEquals(prompts.get(i).get("greedy_8"), out.get("requests").get(i).get("generated_ids"), "prompt " + i);
        }
    }

    @Test
    void expertParallelSizesThatCannotSplitTheExpertsAreRefusedInOneLine() {
        assertOneLineRefusal(cli("run", "--model", MIXTRAL.toString(), "--stages", "1", "--expert-parallel", "3", "--prompt-ids", "1,2"),
                "--expert-parallel 3 must be >= 1 and divide the 8 experts");
        assertOneLineRefusal(cli("run", "--model", DENSE.toString(), "--stages", "1", "--expert-parallel", "2", "--prompt-ids", "1,2"),
                "--expert-parallel 2: the model has no mixture of experts");
        assertOneLineRefusal(cli("bench", "moe", "--model", DENSE.toString()), "not a mixture-of-experts model");
    }

    @Test
    void benchMoeReportsEachSizeAgainstTheSingleLaneWithTheSameTokens() throws Exception {
        Run run = cli("bench", "moe", "--model", MIXTRAL.toString(), "--expert-parallel", "1,2", "--requests", "2", "--prompt-tokens", "4",
                "--new-tokens", "3", "--rounds", "1", "--json");
        assertEquals(0, run.status(), run.err());
        JsonNode out = JSON.readTree(run.out());
        JsonNode runs = out.get("runs");
        assertEquals(3, runs.size());
        assertEquals("single lane", runs.get(0).get("label").asText());
        for (JsonNode r : runs) {
            assertTrue(r.get("tokens_per_second").asDouble() > 0, r.toString());
            assertTrue(r.get("tokens_equal_single_lane").asBoolean(), r.toString());
        }
        assertEquals(0.0, runs.get(1).get("all_to_all_bytes_per_step").asDouble(), "one expert lane moves nothing");
        assertTrue(runs.get(2).get("all_to_all_bytes_per_step").asDouble() > 0, "two expert lanes move rows: " + runs.get(2));
        assertTrue(runs.get(2).get("all_to_all_steps").asLong() > 0);
        assertTrue(runs.get(2).get("all_to_all_ms_per_step").asDouble() > 0
                && runs.get(2).get("all_to_all_ms_per_step").asDouble() <= runs.get(2).get("dispatch_to_combine_ms_per_step").asDouble(),
                "the all-to-alls are part of dispatch to combine: " + runs.get(2));
    }

    @Test
    void inspectNamesTheExperts() {
        Run run = cli("inspect", Path.of("..", "inference", "src", "test", "resources", "hf-fixtures", "qwen3-moe").toString());
        assertEquals(0, run.status(), run.err());
        assertTrue(run.out().contains("architecture: Qwen3MoeForCausalLM (layers 3"), run.out());
        assertTrue(run.out().contains("experts:      8 experts, top-3 not renormalised, expert width 24, sparse layers 2 of 3"), run.out());
    }
}
