package io.graphlane.server;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.graphlane.inference.api.TextGenerator;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.http.javadsl.ServerBinding;

/** An {@link OpenAiServer} on a free port over a generator made in the test kit's actor system, and a JDK client for it. */
final class TestServer implements AutoCloseable {
    static final ObjectMapper JSON = new ObjectMapper();

    final TextGenerator generator;
    private final ActorTestKit testKit;
    private final ServerBinding binding;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private final String base;

    TestServer(Function<ActorSystem<?>, TextGenerator> generatorIn) throws Exception {
        this(generatorIn, InputLimits.defaults(), ConfigFactory.empty());
    }

    /**
     * A server preparing requests within {@code inputLimits}, in an actor system configured by {@code config} over the
     * test kit's defaults.
     */
    TestServer(Function<ActorSystem<?>, TextGenerator> generatorIn, InputLimits inputLimits, Config config) throws Exception {
        testKit = config.isEmpty() ? ActorTestKit.create() : ActorTestKit.create(config.withFallback(ConfigFactory.load()));
        generator = generatorIn.apply(testKit.system());
        binding = new OpenAiServer(testKit.system(), generator, new ServerMetrics(generator), ServerOptions.defaults(), inputLimits)
                .bind("127.0.0.1", 0).toCompletableFuture().get(10, TimeUnit.SECONDS);
        base = "http://127.0.0.1:" + binding.localAddress().getPort();
    }

    /** The port the server is bound to. */
    int port() {
        return binding.localAddress().getPort();
    }

    /** The actor system the server runs in. */
    ActorSystem<?> system() {
        return testKit.system();
    }

    /** {@code GET path}. */
    HttpResponse<String> get(String path) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create(base + path)).timeout(Duration.ofSeconds(30)).GET().build(),
                HttpResponse.BodyHandlers.ofString());
    }

    /** {@code POST path} with a JSON {@code body}, answered later. */
    java.util.concurrent.CompletableFuture<HttpResponse<String>> postAsync(String path, String body) {
        return http.sendAsync(HttpRequest.newBuilder(URI.create(base + path))
                .timeout(Duration.ofSeconds(60))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
    }

    /** {@code POST /v1/completions} with {@code body}. */
    HttpResponse<String> complete(String body) throws Exception {
        return post("/v1/completions", body);
    }

    /** {@code POST path} with a JSON {@code body}. */
    HttpResponse<String> post(String path, String body) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create(base + path))
                .timeout(Duration.ofSeconds(30))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
    }

    /**
     * Opens a raw HTTP/1.1 connection to {@code port} and sends {@code POST path} with a JSON {@code body} on it; the
     * caller closes it when its client goes away.
     */
    static Socket rawPost(int port, String path, String body) throws Exception {
        Socket socket = new Socket("127.0.0.1", port);
        socket.setSoTimeout(60_000);
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        OutputStream out = socket.getOutputStream();
        out.write(("POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: "
                + bytes.length + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
        out.write(bytes);
        out.flush();
        return socket;
    }

    /** The body of a completion that must succeed. */
    JsonNode ok(String body) throws Exception {
        HttpResponse<String> r = complete(body);
        assertEquals(200, r.statusCode(), r.body());
        return JSON.readTree(r.body());
    }

    static List<Integer> ints(JsonNode array) {
        List<Integer> out = new ArrayList<>();
        array.forEach(n -> out.add(n.asInt()));
        return out;
    }

    /** The JSON events of a streamed response, without the final [DONE] (asserted present). */
    static List<JsonNode> events(HttpResponse<String> r) throws Exception {
        List<String> data = r.body().lines().filter(l -> l.startsWith("data: ")).map(l -> l.substring(6)).collect(Collectors.toList());
        assertEquals("[DONE]", data.get(data.size() - 1), r.body());
        List<JsonNode> out = new ArrayList<>();
        for (String d : data.subList(0, data.size() - 1)) {
            out.add(JSON.readTree(d));
        }
        return out;
    }

    /** A streamed single choice put together: its text pieces in order, its token ids, its one finish reason. */
    record Streamed(List<String> pieces, List<Integer> tokenIds, String finishReason) {
        String text() {
            return String.join("", pieces);
        }
    }

    /** The single choice of a streamed response, asserting one final chunk. */
    static Streamed streamedChoice(HttpResponse<String> r) throws Exception {
        assertEquals(200, r.statusCode(), r.body());
        List<String> pieces = new ArrayList<>();
        List<Integer> ids = new ArrayList<>();
        String finish = null;
        for (JsonNode e : events(r)) {
            JsonNode c = e.get("choices").get(0);
            pieces.add(c.get("text").asText());
            ids.addAll(ints(c.get("token_ids")));
            if (!c.get("finish_reason").isNull()) {
                assertEquals(null, finish, "one final chunk: " + r.body());
                finish = c.get("finish_reason").asText();
            }
        }
        return new Streamed(pieces, ids, finish);
    }

    @Override
    public void close() throws Exception {
        try {
            binding.unbind().toCompletableFuture().get(10, TimeUnit.SECONDS);
            generator.close();
        } finally {
            testKit.shutdownTestKit();
        }
    }
}
