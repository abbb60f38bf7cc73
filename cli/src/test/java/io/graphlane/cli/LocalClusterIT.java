package io.graphlane.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The local cluster as a user runs it: {@code local-cluster.sh start 3} starts three node JVMs from the built jar on
 * loopback, the serving node answers {@code /v1/completions} with the fixture's greedy tokens through stages on all
 * three, a {@code kill -9} of a non-serving node fails requests with a 503 naming it, and the same start command
 * brings the node back without restarting the others; and four nodes holding two stages of two tensor-parallel shards
 * each answer with the same tokens, before and after a shard's node is killed (the first request it fails gets a 503,
 * and /health and /ready turn 503 with it) and started again (its stage re-forms). Runs in the integration-test phase, after the jar is built.
 */
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class LocalClusterIT {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Path MODULE = Path.of("").toAbsolutePath();
    private static final Path SCRIPT = MODULE.resolve("../cluster-config/scripts/local-cluster.sh").normalize();
    private static final Path FIXTURE = MODULE.resolve("../checkpoint/src/test/resources/tiny-llama").normalize();
    private static final Path RUN_DIR = MODULE.resolve("target/it-local-cluster");
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    private static int script(String... args) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>(List.of("bash", SCRIPT.toString()));
        command.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(RUN_DIR.resolve("script.log").toFile()));
        pb.environment().put("GRAPHLANE_RUN_DIR", RUN_DIR.toString());
        pb.environment().put("GRAPHLANE_JAR", MODULE.resolve("target/graphlane.jar").toString());
        pb.environment().put("GRAPHLANE_JAVA_OPTS", "-Xmx384m");
        Process p = pb.start();
        if (!p.waitFor(4, TimeUnit.MINUTES)) {
            p.destroyForcibly();
            throw new AssertionError("local-cluster.sh " + String.join(" ", args) + " did not return; see " + RUN_DIR);
        }
        return p.exitValue();
    }

    private static String startArgs() {
        return FIXTURE.toString();
    }

    private HttpResponse<String> complete(JsonNode ids) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:8000/v1/completions"))
                .timeout(Duration.ofSeconds(60)).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"prompt\":" + ids + ",\"max_tokens\":16,\"temperature\":0}"))
                .build(), HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
    }

    private HttpResponse<String> get(String url) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(30)).GET().build(),
                HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
    }

        /** Polls (paced, bounded) until a completion succeeds, in case a stage host is listed again only after readiness. */
    private HttpResponse<String> completeOnceAvailable(JsonNode ids, Duration within) throws Exception {
        long deadline = System.nanoTime() + within.toNanos();
        HttpResponse<String> last;
        do {
            last = complete(ids);
            if (last.statusCode() == 200) {
                return last;
            }
            TimeUnit.MILLISECONDS.sleep(250); // paces the polling only
        } while (System.nanoTime() < deadline);
        return last;
    }

    @AfterEach
    void stop() throws Exception {
        script("stop");
    }

    @Test
    void threeNodesServeTheFixtureSurviveAKilledNodeAndTakeItBack() throws Exception {
        Files.createDirectories(RUN_DIR);
        JsonNode prompts = JSON.readTree(FIXTURE.resolve("reference.json").toFile()).get("prompts");
        assertEquals(0, script("start", "3", "--model", startArgs(), "--stages", "3"), "cluster formed; see " + RUN_DIR);

        for (JsonNode p : prompts) {
            HttpResponse<String> r = completeOnceAvailable(p.get("ids"), Duration.ofSeconds(60));
            assertEquals(200, r.statusCode(), r.body());
            assertEquals(p.get("greedy_16"), JSON.readTree(r.body()).get("choices").get(0).get("token_ids"));
        }

        long pid = Long.parseLong(Files.readString(RUN_DIR.resolve("node-2.pid")).trim());
        long killed = System.nanoTime();
        new ProcessBuilder("kill", "-9", Long.toString(pid)).start().waitFor();
        // Requests that need the lost stage fail with a 503 naming the node, within 15 s, and never hang.
        HttpResponse<String> lost;
        do {
            lost = complete(prompts.get(0).get("ids"));
        } while (lost.statusCode() == 200 && System.nanoTime() - killed < TimeUnit.SECONDS.toNanos(15));
        assertEquals(503, lost.statusCode(), lost.body());
        assertTrue(System.nanoTime() - killed < TimeUnit.SECONDS.toNanos(15), "503 within 15 s of the kill");
        assertTrue(lost.body().contains("127.0.0.1:2553"), "names the lost node: " + lost.body());

        // The same start command brings the lost node back; the survivors keep running.
        assertEquals(0, script("start", "3", "--model", startArgs(), "--stages", "3"), "node 2 rejoined; see " + RUN_DIR);
        HttpResponse<String> back = completeOnceAvailable(prompts.get(0).get("ids"), Duration.ofSeconds(60));
        assertEquals(200, back.statusCode(), back.body());
        assertEquals(prompts.get(0).get("greedy_16"), JSON.readTree(back.body()).get("choices").get(0).get("token_ids"));
    }

    @Test
    void fourNodesHoldingTwoStagesOfTwoShardsServeTheFixturesGreedyTokens() throws Exception {
        Files.createDirectories(RUN_DIR);
        JsonNode prompts = JSON.readTree(FIXTURE.resolve("reference.json").toFile()).get("prompts");
        assertEquals(0, script("start", "4", "--model", startArgs(), "--stages", "2", "--tensor-parallel", "2"),
                "cluster formed; see " + RUN_DIR);
        for (JsonNode p : prompts) {
            HttpResponse<String> r = completeOnceAvailable(p.get("ids"), Duration.ofSeconds(60));
            assertEquals(200, r.statusCode(), r.body());
            assertEquals(p.get("greedy_16"), JSON.readTree(r.body()).get("choices").get(0).get("token_ids"));
        }
        String shardLog = Files.readString(RUN_DIR.resolve("node-3.log"));
        assertTrue(shardLog.contains("shard 1 of 2 of stage [1]"), "node 3 holds shard 1 of stage 1: " + shardLog);

        // A shard's node killed: stage 1 answers 503; the same start command brings the node back and the stage
        // re-forms with the surviving shard node as it is.
        long pid = Long.parseLong(Files.readString(RUN_DIR.resolve("node-3.pid")).trim());
        long killed = System.nanoTime();
        new ProcessBuilder("kill", "-9", Long.toString(pid)).start().waitFor();
        // Until the kill has taken effect a request may still be answered; the first that is not gets a 503 (its step
        // meets the lost shard in a collective, or the loss is known already), never a 500.
        HttpResponse<String> lost;
        do {
            lost = complete(prompts.get(0).get("ids"));
        } while (lost.statusCode() == 200 && System.nanoTime() - killed < TimeUnit.SECONDS.toNanos(45));
        assertEquals(503, lost.statusCode(), lost.body());
        assertEquals("5", lost.headers().firstValue("Retry-After").orElse(""), lost.headers().toString());
        assertTrue(lost.body().contains("stage 1"), "names the stage: " + lost.body());
        // From then on the serving node says so, before the failure detector marks the killed node.
        assertEquals(503, get("http://127.0.0.1:8000/health").statusCode());
        assertEquals(503, get("http://127.0.0.1:8558/ready").statusCode());
        assertEquals(0, script("start", "4", "--model", startArgs(), "--stages", "2", "--tensor-parallel", "2"),
                "node 3 rejoined; see " + RUN_DIR);
        for (JsonNode p : prompts) {
            HttpResponse<String> r = completeOnceAvailable(p.get("ids"), Duration.ofSeconds(60));
            assertEquals(200, r.statusCode(), r.body());
            assertEquals(p.get("greedy_16"), JSON.readTree(r.body()).get("choices").get(0).get("token_ids"));
        }
    }
}
