package io.graphlane.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.typesafe.config.ConfigFactory;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.http.javadsl.ServerBinding;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The API port under {@link ConnectionLimits}, against a real bound server: connections over the per-client and the
 * total cap are closed at once, silent and trickling connections are cut after the header-read timeout, a body the
 * client holds up after the idle timeout, and a health check from another client is answered meanwhile. Pekko HTTP's
 * own request and idle timeouts are set to one second in this actor system, so a completion that outlives them shows
 * they no longer cut it.
 *
 * <p>The crowds connect from 127.0.0.2 and 127.0.0.3 (on Linux every 127.x address is the loopback interface) so that
 * the fresh client, on 127.0.0.1, is another client.
 */
class ConnectionLimitsTest {
    private static final String CROWD = "127.0.0.2";
    private static final String OTHER_CROWD = "127.0.0.3";
    /** Long enough that a connection opened by a test is still open when the test uses it, on a busy machine. */
    private static final Duration LONG = Duration.ofSeconds(30);

    private static ActorTestKit testKit;
    private static HttpClient http;

    @BeforeAll
    static void start() {
        testKit = ActorTestKit.create(ConfigFactory.parseString("""
                pekko.http.server.request-timeout = 1s
                pekko.http.server.idle-timeout = 1s
                """).withFallback(ConfigFactory.load()));
        http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    }

    @AfterAll
    static void stop() {
        testKit.shutdownTestKit();
    }

    /** A server over {@code generator} on a free port with {@code options}. */
    private static ServerBinding serve(ScriptedGenerator generator, ServerOptions options) throws Exception {
        return new OpenAiServer(testKit.system(), generator, options).bind("127.0.0.1", 0).toCompletableFuture().get(10, TimeUnit.SECONDS);
    }

    private static ServerOptions limits(Duration headerRead, Duration idle, int perClient, int total) {
        return ServerOptions.defaults().withConnectionLimits(new ConnectionLimits(headerRead, idle, perClient, total));
    }

    /** A connection to {@code port} from {@code localAddress}; skips the test where that address cannot be bound. */
    private static Socket connectFrom(String localAddress, int port) throws IOException {
        Socket socket = new Socket();
        try {
            socket.bind(new InetSocketAddress(localAddress, 0));
        } catch (IOException e) {
            socket.close();
            assumeTrue(false, "cannot bind " + localAddress + " (a second loopback address, as on Linux): " + e.getMessage());
        }
        socket.connect(new InetSocketAddress("127.0.0.1", port), 5_000);
        socket.setSoTimeout((int) LONG.toMillis());
        return socket;
    }

    private static void send(Socket socket, String text) throws IOException {
        OutputStream out = socket.getOutputStream();
        out.write(text.getBytes(StandardCharsets.US_ASCII));
        out.flush();
    }

    /** What the server sent on {@code socket} until it closed it, or null when it reset it. */
    private static String readUntilClosed(Socket socket) throws IOException {
        ByteArrayOutputStream got = new ByteArrayOutputStream();
        InputStream in = socket.getInputStream();
        byte[] buffer = new byte[4096];
        try {
            for (int n; (n = in.read(buffer)) >= 0; ) {
                got.write(buffer, 0, n);
            }
        } catch (SocketException reset) {
            return got.size() == 0 ? null : got.toString(StandardCharsets.US_ASCII);
        }
        return got.toString(StandardCharsets.US_ASCII);
    }

    /** Whether the server closed {@code socket} without answering anything on it. */
    private static boolean closedUnanswered(Socket socket) throws IOException {
        String got = readUntilClosed(socket);
        return got == null || got.isEmpty();
    }

    /** GET /health on a connection of its own from {@code localAddress}: the status line, or null if it was closed unanswered. */
    private static String healthFrom(String localAddress, int port) throws IOException {
        try (Socket socket = connectFrom(localAddress, port)) {
            send(socket, "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
            String got = readUntilClosed(socket);
            return got == null || got.isEmpty() ? null : got.lines().findFirst().orElse(null);
        } catch (SocketException reset) {
            return null;
        }
    }

    /** POST /v1/completions with {@code body} from the JDK client. */
    private static HttpResponse<String> complete(ServerBinding binding, String body) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + binding.localAddress().getPort() + "/v1/completions"))
                .timeout(LONG).header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    /** GET /health from the JDK client, on 127.0.0.1. */
    private static int health(int port) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/health")).timeout(Duration.ofSeconds(10)).GET().build(),
                HttpResponse.BodyHandlers.ofString()).statusCode();
    }

    private static void closeAll(List<Socket> sockets) {
        for (Socket s : sockets) {
            try {
                s.close();
            } catch (IOException ignored) {
                // closing a test's own client
            }
        }
    }

    @Test
    void connectionsOverThePerClientCapAreClosedAtOnceAndOtherClientsAreStillAnswered() throws Exception {
        ScriptedGenerator generator = new ScriptedGenerator(4);
        ServerBinding binding = serve(generator, limits(LONG, LONG, 8, 64));
        int port = binding.localAddress().getPort();
        List<Socket> crowd = new ArrayList<>();
        try {
            // 20 connections from one client: half silent, half trickling the start of a request head.
            for (int i = 0; i < 20; i++) {
                Socket socket = connectFrom(CROWD, port);
                crowd.add(socket);
                if (i % 2 == 1) {
                    send(socket, "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n");
                }
            }
            assertEquals(200, health(port), "a fresh client is answered while the crowd holds its connections");
            assertEquals("HTTP/1.1 200 OK", healthFrom(OTHER_CROWD, port), "another address has its own cap");

            // Each of the crowd's connections now finishes its request: those the server kept answer, the rest were closed.
            int answered = 0;
            int closed = 0;
            for (int i = 0; i < crowd.size(); i++) {
                Socket socket = crowd.get(i);
                try {
                    send(socket, (i % 2 == 1 ? "" : "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n") + "Connection: close\r\n\r\n");
                } catch (SocketException alreadyClosed) {
                    closed++;
                    continue;
                }
                String got = readUntilClosed(socket);
                if (got == null || got.isEmpty()) {
                    closed++;
                } else {
                    assertTrue(got.startsWith("HTTP/1.1 200 OK"), got);
                    answered++;
                }
            }
            assertEquals(8, answered, "the per-client cap");
            assertEquals(12, closed, "connections over the cap are closed unanswered");
        } finally {
            closeAll(crowd);
            binding.unbind().toCompletableFuture().get(10, TimeUnit.SECONDS);
            generator.close();
        }
    }

    @Test
    void connectionsOverTheTotalCapAreClosedAtOnceUntilOthersEnd() throws Exception {
        ScriptedGenerator generator = new ScriptedGenerator(4);
        ServerBinding binding = serve(generator, limits(LONG, LONG, 4, 6));
        int port = binding.localAddress().getPort();
        List<Socket> held = new ArrayList<>();
        try {
            for (int i = 0; i < 4; i++) {
                held.add(connectFrom(CROWD, port));
            }
            held.add(connectFrom(OTHER_CROWD, port));
            held.add(connectFrom(OTHER_CROWD, port));
            // Six connections are held (4 + 2, each client within its cap of 4): the port is full, for everyone.
            assertEquals(null, healthFrom("127.0.0.1", port), "a seventh connection is closed unanswered");
            assertEquals(null, healthFrom(OTHER_CROWD, port), "a seventh connection is closed unanswered");
            closeAll(held);
            // The slots come back as the server sees those connections end, on its own threads: poll for it.
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            String answer;
            while ((answer = healthFrom("127.0.0.1", port)) == null && System.nanoTime() - deadline < 0) {
                Thread.sleep(20); // paces the polling of the server's connection count
            }
            assertEquals("HTTP/1.1 200 OK", answer, "answered once the held connections ended");
        } finally {
            closeAll(held);
            binding.unbind().toCompletableFuture().get(10, TimeUnit.SECONDS);
            generator.close();
        }
    }

    @Test
    void silentAndTricklingConnectionsAreCutAfterTheHeaderReadTimeout() throws Exception {
        ScriptedGenerator generator = new ScriptedGenerator(4);
        ServerBinding binding = serve(generator, limits(Duration.ofSeconds(1), LONG, 16, 64));
        int port = binding.localAddress().getPort();
        List<Socket> crowd = new ArrayList<>();
        List<CompletableFuture<Void>> tricklers = new ArrayList<>();
        try {
            Socket silent = connectFrom(CROWD, port);
            crowd.add(silent);
            for (int i = 0; i < 3; i++) {
                Socket trickler = connectFrom(CROWD, port);
                crowd.add(trickler);
                tricklers.add(CompletableFuture.runAsync(() -> trickle(trickler)));
            }
            assertTrue(closedUnanswered(silent), "a connection that sends nothing is closed");
            for (int i = 1; i < crowd.size(); i++) {
                assertTrue(closedUnanswered(crowd.get(i)), "a connection trickling its request head is closed");
            }
            CompletableFuture.allOf(tricklers.toArray(CompletableFuture[]::new)).get(30, TimeUnit.SECONDS);

            // A kept-alive connection gets its answer, then must send its next request head in time too.
            Socket keptAlive = connectFrom(CROWD, port);
            crowd.add(keptAlive);
            send(keptAlive, "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
            String got = readUntilClosed(keptAlive);
            assertTrue(got != null && got.startsWith("HTTP/1.1 200 OK") && got.contains("\"ok\""),
                    "answered, then closed when no next request came: " + got);
        } finally {
            closeAll(crowd);
            binding.unbind().toCompletableFuture().get(10, TimeUnit.SECONDS);
            generator.close();
        }
    }

    /** Sends a request head one header line at a time until the server closes the connection. */
    private static void trickle(Socket socket) {
        try {
            send(socket, "GET /health HTTP/1.1\r\n");
            for (int i = 0; i < 200; i++) {
                Thread.sleep(100); // the trickler's pace: one header line every 100 ms, far within any idle timeout
                send(socket, "X-Line-" + i + ": slow\r\n");
            }
        } catch (IOException closedByServer) {
            // the server cut it: what the test expects
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Test
    void aRequestBodyTheClientStopsSendingIsCutAfterTheIdleTimeout() throws Exception {
        ScriptedGenerator generator = new ScriptedGenerator(4);
        ServerBinding binding = serve(generator, limits(LONG, Duration.ofSeconds(1), 16, 64));
        int port = binding.localAddress().getPort();
        try (Socket socket = connectFrom(CROWD, port)) {
            send(socket, "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                    + "Content-Length: 100\r\n\r\n{\"prompt\":");
            String got = readUntilClosed(socket);
            assertTrue(got == null || got.startsWith("HTTP/1.1 408") && got.contains("sent none of its request body for 1 s"),
                    "answered 408 (if the client still reads) and closed: " + got);
            assertEquals(0, generator.held(), "nothing was submitted");
        } finally {
            binding.unbind().toCompletableFuture().get(10, TimeUnit.SECONDS);
            generator.close();
        }
    }

    @Test
    void aCompletionOutlivingPekkosOwnTimeoutsGetsItsDeadlineAnswer() throws Exception {
        // Pekko's request and idle timeouts are 1 s here, and so are the header-read and idle timeouts: the
        // generation's own 3 s deadline must still be what answers it (504), not a cut connection or a 503.
        ScriptedGenerator generator = new ScriptedGenerator(4);
        generator.honourDeadlines = true;
        java.util.concurrent.CountDownLatch gate = new java.util.concurrent.CountDownLatch(1);
        generator.gate = gate;
        ServerBinding binding = serve(generator, limits(Duration.ofSeconds(1), Duration.ofSeconds(1), 16, 64)
                .withRequestTimeout(Duration.ofSeconds(3)));
        try {
            HttpResponse<String> r = complete(binding, "{\"prompt\":[65],\"max_tokens\":3}");
            assertEquals(504, r.statusCode(), r.body());
            assertEquals("deadline_exceeded", TestServer.JSON.readTree(r.body()).get("error").get("code").asText());
        } finally {
            gate.countDown();
            binding.unbind().toCompletableFuture().get(10, TimeUnit.SECONDS);
            generator.close();
        }
    }

    @Test
    void aCompletionWhoseGenerationOverrunsIsAnswered503NamingTheLimitThatApplied() throws Exception {
        ScriptedGenerator generator = new ScriptedGenerator(4);
        java.util.concurrent.CountDownLatch gate = new java.util.concurrent.CountDownLatch(1);
        generator.gate = gate;
        ServerBinding binding = serve(generator, limits(Duration.ofSeconds(1), Duration.ofSeconds(1), 16, 64)
                .withRequestTimeout(Duration.ofSeconds(1)));
        try {
            HttpResponse<String> r = complete(binding, "{\"prompt\":[65],\"max_tokens\":3}");
            assertEquals(503, r.statusCode(), r.body());
            JsonNode error = TestServer.JSON.readTree(r.body()).get("error");
            assertEquals("request_timeout", error.get("code").asText());
            assertTrue(error.get("message").asText().contains("within the request timeout of 6 s"), r.body());
            assertTrue(error.get("message").asText().contains("at most 1 s"), r.body());
            assertEquals(1, generator.cancelled.get(), "the generation of a request that timed out is cancelled");
        } finally {
            gate.countDown();
            binding.unbind().toCompletableFuture().get(10, TimeUnit.SECONDS);
            generator.close();
        }
    }

    @Test
    void aSlowStreamIsNotIdleWhileTheServerGenerates() throws Exception {
        // Tokens come every 1.5 s, past the 1 s idle and header-read timeouts and Pekko's own 1 s timeouts: the time
        // the server takes is never the client's idleness.
        ScriptedGenerator generator = new ScriptedGenerator(4);
        generator.tokenInterval = Duration.ofMillis(1500);
        ServerBinding binding = serve(generator, limits(Duration.ofSeconds(1), Duration.ofSeconds(1), 16, 64));
        try {
            HttpResponse<String> r = complete(binding, "{\"prompt\":[65],\"max_tokens\":2,\"stream\":true}");
            assertEquals(ScriptedGenerator.expected(List.of(65), 2), TestServer.streamedChoice(r).tokenIds());
        } finally {
            binding.unbind().toCompletableFuture().get(10, TimeUnit.SECONDS);
            generator.close();
        }
    }
}
