package io.graphlane.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
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
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@code graphlane serve} from the built jar, on the demo model with a 512 MB heap, fed prompts of megabytes and
 * malformed requests: each big prompt is refused with a 400 naming the field and the limit (they used to be tokenized
 * on the dispatcher, and one such prompt aborted the JVM), malformed requests are answered in OpenAI's error shape
 * (the jar's configuration names the server's handler, which the concatenated reference.conf alone would not), and
 * the server serves on. Runs in the integration-test phase, after the jar is built.
 */
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class ServeInputIT {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Path MODULE = Path.of("").toAbsolutePath();
    private static final Path RUN_DIR = MODULE.resolve("target/it-serve-input");
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    private HttpResponse<String> get(String url) throws Exception {
        return ServedJar.get(http, url);
    }

    private int awaitHealth(String base, Process process) throws Exception {
        return ServedJar.awaitHealth(http, base, process);
    }

    private CompletableFuture<HttpResponse<String>> post(String url, String body) {
        return http.sendAsync(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(120))
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void megabytePromptsAndMalformedRequestsAreRefusedAndTheServerServesOn() throws Exception {
        Files.createDirectories(RUN_DIR);
        int port = ServedJar.freePort();
        String base = "http://127.0.0.1:" + port;
        Path log = RUN_DIR.resolve("serve.log");
        Process serve = new ProcessBuilder("java", "-Xmx512m", "-jar", MODULE.resolve("target/graphlane.jar").toString(), "serve",
                "--stages", "1", "--port", Integer.toString(port))
                .redirectErrorStream(true).redirectOutput(log.toFile()).start();
        try {
            assertEquals(200, awaitHealth(base, serve), "the server came up; see " + log);

            // Eight concurrent prompts of 7 MB: each refused, with a 400 naming the prompt and the limit, or a 429 when
            // every preparation thread and queue place was taken.
            String big = "{\"prompt\":\"" + "x".repeat(7 << 20) + "\",\"max_tokens\":1}";
            List<CompletableFuture<HttpResponse<String>>> bigOnes = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                bigOnes.add(post(base + "/v1/completions", big));
            }
            int refusedAsTooLong = 0;
            for (CompletableFuture<HttpResponse<String>> f : bigOnes) {
                HttpResponse<String> r = f.get(2, TimeUnit.MINUTES);
                assertTrue(r.statusCode() == 400 || r.statusCode() == 429, r.statusCode() + " " + r.body());
                if (r.statusCode() == 400) {
                    refusedAsTooLong++;
                    JsonNode error = JSON.readTree(r.body()).get("error");
                    assertEquals("prompt", error.get("param").asText());
                    assertTrue(error.get("message").asText().startsWith("prompt is " + (7 << 20) + " bytes of UTF-8 text; this model"
                            + " takes at most 4096 bytes"), error.toString());
                }
            }
            assertTrue(refusedAsTooLong > 0, "at least one was read and refused as too long");

            for (int i = 0; i < 10; i++) {
                String response = exchange(port, "GET /he%%alth HTTP/1.1\r\nHost: x\r\n\r\n");
                assertTrue(response.startsWith("HTTP/1.1 400"), response);
                JsonNode error = JSON.readTree(response.substring(response.indexOf("\r\n\r\n") + 4)).get("error");
                assertEquals("invalid_request_error", error.get("type").asText(), response);
            }

            assertEquals(200, get(base + "/health").statusCode());
            HttpResponse<String> ok = post(base + "/v1/completions", "{\"prompt\":\"Hello\",\"max_tokens\":4}").get(1, TimeUnit.MINUTES);
            assertEquals(200, ok.statusCode(), ok.body());
            assertTrue(serve.isAlive(), "the server is still running; see " + log);
            long warnings = Files.readAllLines(log).stream().filter(l -> l.contains("WARN") && l.contains("malformed HTTP request")).count();
            assertTrue(warnings <= 2, warnings + " warnings for 10 malformed requests; see " + log);
        } finally {
            serve.destroyForcibly();
        }
    }

    /** Sends {@code request} on a connection of its own; the response's head and body (the server closes after it). */
    private static String exchange(int port, String request) throws Exception {
        try (Socket socket = new Socket("127.0.0.1", port)) {
            socket.setSoTimeout(30_000);
            OutputStream out = socket.getOutputStream();
            out.write(request.getBytes(StandardCharsets.US_ASCII));
            out.flush();
            InputStream in = socket.getInputStream();
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }
}
