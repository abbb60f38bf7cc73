package io.graphlane.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import com.fasterxml.jackson.databind.JsonNode;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.event.NoLogging$;
import org.apache.pekko.http.scaladsl.model.ErrorInfo;
import org.apache.pekko.http.scaladsl.model.StatusCodes;
import org.apache.pekko.http.scaladsl.settings.ServerSettings;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/**
 * Malformed requests do not fill the log: each is answered in OpenAI's error shape, and the warnings about them come at
 * most once per interval, counting the others.
 */
class MalformedRequestsTest {

    /** Captures what {@code name} logs, at debug and up, until closed. */
    private static final class Captured implements AutoCloseable {
        final ListAppender<ILoggingEvent> events = new ListAppender<>();
        private final Logger logger;
        private final Level level;

        Captured(String name) {
            logger = (Logger) LoggerFactory.getLogger(name);
            level = logger.getLevel();
            logger.setLevel(Level.DEBUG);
            logger.setAdditive(false);
            events.start();
            logger.addAppender(events);
        }

        long count(Level at) {
            synchronized (events.list) {
                return events.list.stream().filter(e -> e.getLevel() == at).count();
            }
        }

        String warning(int i) {
            synchronized (events.list) {
                return events.list.stream().filter(e -> e.getLevel() == Level.WARN).skip(i).findFirst().orElseThrow().getFormattedMessage();
            }
        }

        @Override
        public void close() {
            logger.detachAppender(events);
            logger.setAdditive(true);
            logger.setLevel(level);
        }
    }

    @Test
    void warningsComeAtMostOncePerIntervalAndCountTheOthers() {
        AtomicLong now = new AtomicLong(1_000L);
        try (Captured log = new Captured("test.rate-limited")) {
            RateLimitedWarnings warnings = new RateLimitedWarnings(LoggerFactory.getLogger("test.rate-limited"), Duration.ofSeconds(10),
                    now::get);
            for (int i = 0; i < 5; i++) {
                warnings.warn("bad request " + i, null);
            }
            assertEquals(1, log.count(Level.WARN));
            assertEquals(4, log.count(Level.DEBUG));
            now.addAndGet(Duration.ofSeconds(9).toNanos());
            warnings.warn("bad request 5", null);
            assertEquals(1, log.count(Level.WARN), "still within the interval");
            now.addAndGet(Duration.ofSeconds(1).toNanos());
            warnings.warn("bad request 6", new IllegalStateException("why"));
            assertEquals(2, log.count(Level.WARN));
            assertEquals("bad request 0", log.warning(0));
            assertEquals("bad request 6 (5 more since the last warning, logged at debug)", log.warning(1));
        }
    }

    @Test
    void manyMalformedRequestsAreEachAnsweredAsJsonAndWarnedAboutOnce() throws Exception {
        int requests = 40;
        try (TestServer server = new TestServer(system -> new ScriptedGenerator(4));
                Captured log = new Captured(MalformedRequests.class.getName())) {
            // This module's reference.conf names the handler and silences Pekko's per-header warnings.
            var config = server.system().settings().config();
            assertEquals(MalformedRequests.class.getName(), config.getString("pekko.http.server.parsing.error-handler"));
            assertEquals(false, config.getBoolean("pekko.http.server.parsing.illegal-header-warnings"));
            for (int i = 0; i < requests; i++) {
                String response = exchange(server.port(), "GET /he%%alth HTTP/1.1\r\nHost: x\r\n\r\n");
                assertTrue(response.startsWith("HTTP/1.1 400"), response);
                JsonNode error = TestServer.JSON.readTree(response.substring(response.indexOf("\r\n\r\n") + 4)).get("error");
                assertEquals("invalid_request_error", error.get("type").asText(), response);
                assertTrue(error.get("message").asText().contains("request-target"), response);
            }
            assertEquals(requests, log.count(Level.WARN) + log.count(Level.DEBUG), "every one was seen");
            // One a 10 s interval; a second only if this test ran across an interval's end (or an earlier test in this
            // JVM warned less than 10 s ago and this one opened none).
            assertTrue(log.count(Level.WARN) <= 2, log.count(Level.WARN) + " warnings for " + requests + " malformed requests");
            assertEquals(200, server.get("/health").statusCode());
        }
    }

    @Test
    void aHeadCutByItsConnectionsEndIsNoWarning() {
        ActorTestKit testKit = ActorTestKit.create();
        try (Captured log = new Captured(MalformedRequests.class.getName())) {
            ServerSettings settings = (ServerSettings) org.apache.pekko.http.javadsl.settings.ServerSettings.create(testKit.system().classicSystem());
            MalformedRequests handler = new MalformedRequests();
            handler.handle(StatusCodes.BadRequest(), new ErrorInfo(MalformedRequests.CUT_HEAD, ""), NoLogging$.MODULE$, settings);
            assertEquals(0, log.count(Level.WARN), "a head cut by the header-read timeout is no warning");
            assertEquals(1, log.count(Level.DEBUG));
            handler.handle(StatusCodes.NotImplemented(), new ErrorInfo("Unsupported HTTP method: BREW", ""), NoLogging$.MODULE$, settings);
            assertEquals(2, log.count(Level.WARN) + log.count(Level.DEBUG), "any other parsing error goes through the rate-limited warnings");
            assertTrue(log.events.list.get(1).getFormattedMessage().contains("BREW"), log.events.list.get(1).getFormattedMessage());
        } finally {
            testKit.shutdownTestKit();
        }
    }

    /** Sends {@code request} on a connection of its own and reads the response's head and its Content-Length of body. */
    private static String exchange(int port, String request) throws Exception {
        try (Socket socket = new Socket("127.0.0.1", port)) {
            socket.setSoTimeout(10_000);
            OutputStream out = socket.getOutputStream();
            out.write(request.getBytes(StandardCharsets.US_ASCII));
            out.flush();
            InputStream in = socket.getInputStream();
            StringBuilder head = new StringBuilder();
            while (head.indexOf("\r\n\r\n") < 0) {
                int b = in.read();
                if (b < 0) {
                    return head.toString();
                }
                head.append((char) b);
            }
            Matcher length = Pattern.compile("(?i)content-length: (\\d+)").matcher(head);
            byte[] body = length.find() ? in.readNBytes(Integer.parseInt(length.group(1))) : in.readAllBytes();
            return head + new String(body, StandardCharsets.UTF_8);
        }
    }
}
