package io.graphlane.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
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

/** {@code run --tensor-parallel}: the done-when command on the fixture, and the refusal of a degree that splits a head. */
class TensorParallelRunTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Path FIXTURE = Path.of("..", "checkpoint", "src", "test", "resources", "tiny-llama");

    private static String[] run(List<String> args, int expectedStatus) {
        CommandLine cli = GraphlaneCli.commandLine();
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        cli.setOut(new PrintWriter(out));
        cli.setErr(new PrintWriter(err));
        int status = cli.execute(args.toArray(String[]::new));
        assertEquals(expectedStatus, status, err.toString());
        return new String[] {out.toString(), err.toString()};
    }

    @Test
    void twoStagesTimesTwoShardsGiveTheReferenceGreedyTokens() throws Exception {
        JsonNode ref = JSON.readTree(FIXTURE.resolve("reference.json").toFile()).get("prompts");
        List<String> args = new ArrayList<>(List.of("run", "--model", FIXTURE.toString(), "--stages", "2", "--tensor-parallel", "2",
                "--max-new-tokens", "16", "--temperature", "0", "--json"));
        for (JsonNode p : ref) {
            List<String> ids = new ArrayList<>();
            p.get("ids").forEach(n -> ids.add(n.asText()));
            args.add("--prompt-ids");
            args.add(String.join(",", ids));
        }
        JsonNode out = JSON.readTree(run(args, 0)[0]);
        assertEquals(2, out.get("tensor_parallel").asInt());
        for (int i = 0; i < ref.size(); i++) {
            assertEquals(ref.get(i).get("greedy_16"), out.get("requests").get(i).get("generated_ids"), "prompt " + i);
        }
    }

    @Test
    void aDegreeThatSplitsAHeadEndsWithOneLine() {
        String err = run(List.of("run", "--model", FIXTURE.toString(), "--tensor-parallel", "4", "--json"), GraphlaneCli.EXIT_USER_ERROR)[1];
        assertTrue(err.contains("--tensor-parallel 4 does not divide num_key_value_heads = 2"), err);
        assertEquals(1, err.strip().lines().count(), err);
    }
}
