package io.graphlane.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpServer;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import picocli.CommandLine;

/**
 * {@code graphlane attack --target}: against the real server (on the fixture model) every attack is refused the way it
 * should be and the server serves on, so the command exits 0; against a server that answers every request 200 (a
 * server with no input limits at all) it finds the wrong answers and exits 1. Small crowds, so the suite stays short.
 */
@Timeout(value = 3, unit = TimeUnit.MINUTES)
class AttackCommandTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Path FIXTURE = Path.of("..", "checkpoint", "src", "test", "resources", "tiny-llama");

    private record Outcome(int status, String out, String err) {
    }

    private static Outcome attack(String... args) {
        CommandLine cli = GraphlaneCli.commandLine();
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        cli.setOut(new PrintWriter(out));
        cli.setErr(new PrintWriter(err));
        List<String> all = new ArrayList<>(List.of("attack"));
        all.addAll(List.of(args));
        int status = cli.execute(all.toArray(String[]::new));
        return new Outcome(status, out.toString(), err.toString());
    }

    @Test
    void theServerHoldsUpUnderEveryHttpAttack() throws Exception {
        ServeCommand command = new ServeCommand();
        new CommandLine(command).parseArgs("--model", FIXTURE.toString(), "--stages", "1", "--host", "127.0.0.1", "--port", "0");
        try (ServeCommand.Running server = command.start()) {
            Outcome o = attack("--target", "http://127.0.0.1:" + server.port(), "--connections", "40", "--trickle-seconds", "3",
                    "--pid", Long.toString(ProcessHandle.current().pid()), "--json");
            JsonNode report = JSON.readTree(o.out());
            assertEquals(0, o.status(), o.out() + o.err());
            assertTrue(report.get("passed").asBoolean(), o.out());
            List<String> names = new ArrayList<>();
            for (JsonNode a : report.get("attacks")) {
                names.add(a.get("name").asText());
                assertTrue(a.get("held").asBoolean(), a.toString());
                assertTrue(a.get("sent").asInt() > 0, a.toString());
            }
            assertEquals(List.of("oversized-prompt", "oversized-chat-content", "concurrent-oversized-prompts", "malformed-bodies",
                    "idle-connections", "trickling-headers"), names);
            assertEquals(0, report.get("server_crashes").asInt());
            assertTrue(report.get("peak_rss_mb").asDouble() > 0, o.out());
        }
    }

    @Test
    void aServerThatTakesAnyInputFailsTheAttack() throws Exception {
        HttpServer lax = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        ExecutorService threads = Executors.newFixedThreadPool(8);
        lax.setExecutor(threads);
        lax.createContext("/", exchange -> {
            exchange.getRequestBody().readAllBytes();
            byte[] body = "{}".getBytes(StandardCharsets.UTF_8);
            exchange.getResponseHeaders().add("Content-Type", "application/json");
            exchange.sendResponseHeaders(200, body.length);
            exchange.getResponseBody().write(body);
            exchange.close();
        });
        lax.start();
        try {
            Outcome o = attack("--target", "http://127.0.0.1:" + lax.getAddress().getPort(), "--connections", "4",
                    "--trickle-seconds", "0", "--json");
            assertEquals(1, o.status(), o.out() + o.err());
            JsonNode report = JSON.readTree(o.out());
            assertFalse(report.get("passed").asBoolean());
            assertEquals(0, report.get("server_crashes").asInt(), "it answered throughout");
            JsonNode malformed = null;
            for (JsonNode a : report.get("attacks")) {
                if (a.get("name").asText().equals("malformed-bodies")) {
                    malformed = a;
                }
            }
            assertFalse(malformed.get("held").asBoolean(), malformed.toString());
            assertTrue(malformed.get("problems").get(0).asText().endsWith("was answered 200, expected a 4xx: {}"), malformed.toString());
            assertTrue(report.get("peak_rss_mb").isNull(), "no --pid, no memory figure");
        } finally {
            lax.stop(0);
            threads.shutdownNow();
        }
    }

    @Test
    void anIncompleteCommandIsRefusedByName() {
        Outcome none = attack();
        assertEquals(2, none.status());
        assertTrue(none.err().contains("name what to attack: --target URL"), none.err());
        Outcome noManagement = attack("--artery", "127.0.0.1:25520");
        assertEquals(2, noManagement.status());
        assertTrue(noManagement.err().contains("--artery needs --management URL"), noManagement.err());
        Outcome badTarget = attack("--target", "https://127.0.0.1");
        assertEquals(2, badTarget.status());
        assertTrue(badTarget.err().contains("--target: expected http://HOST:PORT, got https://127.0.0.1"), badTarget.err());
    }
}
