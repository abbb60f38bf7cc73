package io.graphlane.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
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
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@code graphlane serve} as a user runs it, from the built jar, stopped with SIGTERM while four streams are
 * generating on the demo model: {@code /health} and new completions turn 503 at once, each stream still ends with
 * its {@code [DONE]}, and the process exits 0. Runs in the integration-test phase, after the jar is built.
 */
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class ServeDrainIT {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Path MODULE = Path.of("").toAbsolutePath();
    private static final Path RUN_DIR = MODULE.resolve("target/it-serve-drain");
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    private HttpResponse<String> get(String url) throws Exception {
        return ServedJar.get(http, url);
    }

    private int awaitHealth(String base, Process process) throws Exception {
        return ServedJar.awaitHealth(http, base, process);
    }

    @Test
    void sigtermDrainsStreamsInFlightThenExitsZero() throws Exception {
        Files.createDirectories(RUN_DIR);
        int port = ServedJar.freePort();
        String base = "http://127.0.0.1:" + port;
        Path log = RUN_DIR.resolve("serve.log");
        Process serve = new ProcessBuilder("java", "-Xmx1g", "-jar", MODULE.resolve("target/graphlane.jar").toString(), "serve",
                "--stages", "2", "--port", Integer.toString(port), "--drain-seconds", "120")
                .redirectErrorStream(true).redirectOutput(log.toFile()).start();
        try {
            assertEquals(200, awaitHealth(base, serve), "the server came up; see " + log);

            // Four streams, each read on its own thread; the test goes on once every one has sent its first token.
            CountDownLatch started = new CountDownLatch(4);
            List<CompletableFuture<List<String>>> streams = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                String body = "{\"prompt\":\"Stream number " + i + " says\",\"max_tokens\":160,\"temperature\":0,\"stream\":true}";
                CompletableFuture<HttpResponse<InputStream>> response = http.sendAsync(HttpRequest.newBuilder(URI.create(base + "/v1/completions"))
                        .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body)).build(),
                        HttpResponse.BodyHandlers.ofInputStream());
                streams.add(response.thenApplyAsync(r -> readEvents(r, started)));
            }
            assertTrue(started.await(2, TimeUnit.MINUTES), "every stream started; see " + log);
            serve.destroy(); // SIGTERM

            int drainingHealth = -1;
            long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (drainingHealth != 503 && System.nanoTime() - until < 0) {
                drainingHealth = get(base + "/health").statusCode();
            }
            assertEquals(503, drainingHealth, "/health turns 503 once the drain began");
            HttpResponse<String> refused = http.send(HttpRequest.newBuilder(URI.create(base + "/v1/completions"))
                    .timeout(Duration.ofSeconds(10)).header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofString("{\"prompt\":\"late\",\"max_tokens\":2}")).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertEquals(503, refused.statusCode(), refused.body());
            assertEquals("draining", JSON.readTree(refused.body()).get("error").get("code").asText());
            assertTrue(refused.headers().firstValue("Retry-After").isPresent());

            for (int i = 0; i < 4; i++) {
                List<String> events = streams.get(i).get(2, TimeUnit.MINUTES);
                assertEquals("[DONE]", events.get(events.size() - 1), "stream " + i + " ended with [DONE]: " + events);
                JsonNode last = JSON.readTree(events.get(events.size() - 2));
                assertTrue(last.has("choices") && !last.get("choices").get(0).get("finish_reason").isNull(),
                        "stream " + i + " finished normally: " + last);
            }
            assertTrue(serve.waitFor(2, TimeUnit.MINUTES), "the server stopped after the drain; see " + log);
            assertEquals(0, serve.exitValue(), "exit status after a drained SIGTERM; see " + log);
        } finally {
            serve.destroyForcibly();
        }
    }

    @Test
    void sigtermStopsAServingNodeThroughItsDrainAndExitsZero() throws Exception {
        Files.createDirectories(RUN_DIR);
        int port = ServedJar.freePort();
        int artery = ServedJar.freePort();
        String base = "http://127.0.0.1:" + port;
        Path log = RUN_DIR.resolve("node.log");
        Path fixture = MODULE.resolve("../checkpoint/src/test/resources/tiny-llama").normalize();
        Process node = new ProcessBuilder("java", "-Xmx1g", "-jar", MODULE.resolve("target/graphlane.jar").toString(), "node",
                "--profile", "static", "--host", "127.0.0.1", "--artery-port", Integer.toString(artery), "--seed",
                "127.0.0.1:" + artery, "--management-port", Integer.toString(ServedJar.freePort()), "--rank", "0", "--nodes", "1",
                "--model", fixture.toString(), "--serve", "--port", Integer.toString(port), "--drain-seconds", "60")
                .redirectErrorStream(true).redirectOutput(log.toFile()).start();
        try {
            assertEquals(200, awaitHealth(base, node), "the node came up serving; see " + log);
            HttpResponse<String> done = http.send(HttpRequest.newBuilder(URI.create(base + "/v1/completions"))
                    .timeout(Duration.ofSeconds(30)).header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofString("{\"prompt\":[250],\"max_tokens\":4,\"temperature\":0}")).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertEquals(200, done.statusCode(), done.body());

            node.destroy(); // SIGTERM
            assertTrue(node.waitFor(2, TimeUnit.MINUTES), "the node stopped after its drain; see " + log);
            assertEquals(0, node.exitValue(), "exit status after a requested stop; see " + log);
        } finally {
            node.destroyForcibly();
        }
    }

    /** The {@code data:} payloads of one stream; counts {@code started} down at its first token. */
    private static List<String> readEvents(HttpResponse<InputStream> response, CountDownLatch started) {
        List<String> events = new ArrayList<>();
        try (BufferedReader in = new BufferedReader(new InputStreamReader(response.body(), StandardCharsets.UTF_8))) {
            String line;
            while ((line = in.readLine()) != null) {
                if (line.startsWith("data: ")) {
                    if (events.isEmpty()) {
                        started.countDown();
                    }
                    events.add(line.substring(6));
                }
            }
        } catch (java.io.IOException e) {
            events.add("broken: " + e);
        }
        return events;
    }
}
