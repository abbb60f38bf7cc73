package io.graphlane.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.graphlane.inference.chat.ChatTemplate;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.http.javadsl.ServerBinding;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Chat completions take part in the server's drain and are cancelled when their client goes away, as text
 * completions are: on the scripted generator with a template that writes the messages' contents one after another.
 */
class ChatDrainTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String TEMPLATE = "{% for m in messages %}{{ m.content }}{% endfor %}";
    private static ActorTestKit testKit;
    private static HttpClient http;

    @BeforeAll
    static void start() {
        testKit = ActorTestKit.create();
        http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    }

    @AfterAll
    static void stop() {
        testKit.shutdownTestKit();
    }

    /** A server over a scripted generator with the template, whose generations wait for {@code gate}. */
    private record Gated(CountDownLatch gate, ScriptedGenerator generator, OpenAiServer server, ServerBinding binding) implements AutoCloseable {
        static Gated start() throws Exception {
            CountDownLatch gate = new CountDownLatch(1);
            ScriptedGenerator g = new ScriptedGenerator(8);
            g.chatTemplate = new ChatTemplate(TEMPLATE, "", "");
            g.gate = gate;
            OpenAiServer server = new OpenAiServer(testKit.system(), g);
            return new Gated(gate, g, server, server.bind("127.0.0.1", 0).toCompletableFuture().get(10, TimeUnit.SECONDS));
        }

        int port() {
            return binding.localAddress().getPort();
        }

        @Override
        public void close() throws Exception {
            gate.countDown();
            binding.unbind().toCompletableFuture().get(10, TimeUnit.SECONDS);
            generator.close();
        }
    }

    private static HttpRequest chat(String at, String body) {
        return HttpRequest.newBuilder(URI.create(at + "/v1/chat/completions")).timeout(Duration.ofSeconds(30))
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body)).build();
    }

    @Test
    void aChatRequestDuringTheDrainIs503AndAStreamInFlightHoldsTheDrainUntilItsDone() throws Exception {
        try (Gated g = Gated.start()) {
            OpenAiServer server = g.server();
            String at = "http://127.0.0.1:" + g.port();
            CompletableFuture<HttpResponse<String>> stream = http.sendAsync(chat(at,
                    "{\"messages\":[{\"role\":\"user\",\"content\":\"F\"}],\"max_tokens\":4,\"stream\":true}"),
                    HttpResponse.BodyHandlers.ofString());
            assertTrue(eventually(() -> server.inFlight() == 1), "the chat stream is counted in flight: " + server.inFlight());
            CompletableFuture<Boolean> drained = server.drain(Duration.ofSeconds(20)).toCompletableFuture();
            assertTrue(!drained.isDone(), "a chat stream is in flight");
            HttpResponse<String> refused = http.send(chat(at, "{\"messages\":[{\"role\":\"user\",\"content\":\"A\"}]}"),
                    HttpResponse.BodyHandlers.ofString());
            assertEquals(503, refused.statusCode(), refused.body());
            assertEquals("draining", JSON.readTree(refused.body()).get("error").get("code").asText(), refused.body());
            assertEquals("5", refused.headers().firstValue("Retry-After").orElse(""));
            g.gate().countDown();
            HttpResponse<String> r = stream.get(30, TimeUnit.SECONDS);
            assertEquals(200, r.statusCode(), r.body());
            assertTrue(r.body().strip().endsWith("data: [DONE]"), r.body());
            assertTrue(drained.get(20, TimeUnit.SECONDS), "the drain ends once the chat stream ended");
            assertEquals(0, server.inFlight());
        }
    }

    @Test
    void aNonStreamedChatWhoseClientWentAwayIsCancelled() throws Exception {
        try (Gated g = Gated.start()) {
            ScriptedGenerator held = g.generator();
            OpenAiServer server = g.server();
            Socket client = send(g.port(), "{\"messages\":[{\"role\":\"user\",\"content\":\"F\"}],\"max_tokens\":8}");
            try {
                // The generation waits at the gate, holding its slot, while its client is still there.
                assertTrue(eventually(() -> held.held() == 1 && server.inFlight() == 1),
                        "held: " + held.held() + ", in flight: " + server.inFlight());
                assertEquals(0, held.cancelled.get());
            } finally {
                client.close();
            }
            assertTrue(eventually(() -> held.cancelled.get() == 1), "the abandoned chat completion is cancelled");
            assertEquals(0, held.held(), "its slot is free");
            assertTrue(eventually(() -> server.inFlight() == 0), "and it no longer holds the drain: " + server.inFlight());
        }
    }

    /** Sends {@code body} to /v1/chat/completions on a raw connection; the caller closes it when its client goes away. */
    private static Socket send(int port, String body) throws Exception {
        return TestServer.rawPost(port, "/v1/chat/completions", body);
    }

    /** Polls {@code condition} (external state) until it holds or 20 s passed. */
    private static boolean eventually(BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                return false;
            }
            Thread.sleep(5); // paces the polling of the server's and the generator's counters
        }
        return true;
    }
}
