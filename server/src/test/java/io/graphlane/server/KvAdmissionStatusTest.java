package io.graphlane.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.graphlane.actors.lane.LaneStoppedException;
import io.graphlane.actors.wire.RemoteFailureException;
import io.graphlane.backend.cpu.collective.MemberLostException;
import io.graphlane.core.completion.PoisonedPreconditionException;
import io.graphlane.core.graph.LaneId;
import io.graphlane.inference.pipeline.InferencePipeline;
import io.graphlane.scheduler.pipeline.PipelineSettings;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.concurrent.CompletionException;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * Statuses of admission by KV-cache memory against a real engine (the tiny-llama fixture: 1 KiB of KV cache per
 * position over its 4 layers, 256 positions at most), and of failures that mean the model is unavailable however they
 * are wrapped. No message a client gets names a setting or a class of the server.
 */
class KvAdmissionStatusTest {
    /** What a client message must never contain: setting keys, command-line options, Java class names. */
    private static final Pattern INTERNAL = Pattern.compile("graphlane\\.|max-|--|Exception|io\\.graphlane|pekko");

    private static Path fixture() throws Exception {
        return Path.of(KvAdmissionStatusTest.class.getResource("/tiny-llama/config.json").toURI()).getParent();
    }

    private static TestServer serve(long kvBudget, PipelineSettings settings) throws Exception {
        Path dir = fixture();
        return new TestServer(system -> InferencePipeline.builder().model(dir).stages(2).settings(settings).kvBudget(kvBudget)
                .actorSystem(system).build());
    }

    private static void assertNamesNothingInternal(String message) {
        assertFalse(INTERNAL.matcher(message).find(), "a client message names no setting, option or class: " + message);
    }

    @Test
    void aRequestThatCanNeverFitTheBudgetGetsA400NamingItsLengthsAndTheBudget() throws Exception {
        try (TestServer server = serve(100 * 1024L, PipelineSettings.defaults(2))) {
            HttpResponse<String> r = server.complete("{\"prompt\":[1,2,3],\"max_tokens\":200}");
            assertEquals(400, r.statusCode(), r.body());
            JsonNode error = TestServer.JSON.readTree(r.body()).get("error");
            assertEquals("max_tokens", error.get("param").asText());
            String message = error.get("message").asText();
            assertTrue(message.contains("the prompt (3 tokens) plus max_tokens (200) is 203 positions"), message);
            assertTrue(message.contains("budget of 100 positions (100.0 KiB)"), message);
            assertTrue(message.contains("max_tokens of at most 97"), message);
            assertNamesNothingInternal(message);
            // The same prompt with what fits is answered.
            JsonNode ok = server.ok("{\"prompt\":[1,2,3],\"max_tokens\":97,\"temperature\":0}");
            assertEquals(97, ok.get("usage").get("completion_tokens").asInt());
        }
    }

    @Test
    void aFullBudgetWithAFullQueueGetsA429WithRetryAfterNamingNoSetting() throws Exception {
        // Room for one request of the model's length, and one place in the queue.
        try (TestServer server = serve(256 * 1024L, PipelineSettings.defaults(2).withRequestLimits(64, 1))) {
            // Three generations of one request are submitted in turn: the first fills the budget, the second fills the
            // queue, the third is refused, and with it the request (the two started are cancelled).
            HttpResponse<String> r = server.complete("{\"prompt\":[[1],[2],[3]],\"max_tokens\":255}");
            assertEquals(429, r.statusCode(), r.body());
            assertEquals("1", r.headers().firstValue("Retry-After").orElseThrow());
            JsonNode error = TestServer.JSON.readTree(r.body()).get("error");
            assertEquals("overloaded", error.get("code").asText());
            String message = error.get("message").asText();
            assertTrue(message.contains("at capacity") && message.contains("retry"), message);
            assertTrue(message.contains("256 of the 256 positions"), message);
            assertNamesNothingInternal(message);
        }
    }

    @Test
    void aLostCollectiveMemberInAnyWrappingIsA503WithoutInternals() {
        MemberLostException lost = new MemberLostException("tp-stage-1-42-3", 7, 1, "its payload socket closed");
        RemoteFailureException remote = new RemoteFailureException(MemberLostException.class.getName(), lost.getMessage());
        // As it reaches the serving node: a stage's failure on another node, poisoning the later stages, in a completion.
        RuntimeException stageFailed = new RuntimeException("requests [5] failed: stage 1 on node n2 failed: " + remote.getMessage(),
                remote);
        Throwable[] wrappings = {
            lost,
            new CompletionException(lost),
            stageFailed,
            new CompletionException(PoisonedPreconditionException.of("stage-2#4", "stage-1#4", stageFailed)),
        };
        for (Throwable failure : wrappings) {
            ApiError e = OpenAiServer.generationError(failure);
            assertEquals(503, e.status().intValue(), failure.toString());
            assertEquals("unavailable", e.code());
            assertNamesNothingInternal(e.getMessage());
            assertFalse(e.getMessage().contains("tp-stage"), e.getMessage());
            assertEquals(ServerMetrics.Outcome.UNAVAILABLE, ServerMetrics.outcomeOf(failure));
        }
        ApiError stopped = OpenAiServer.generationError(new CompletionException(
                new LaneStoppedException(LaneId.of("stage-1"), "stage 1 of the pipeline")));
        assertEquals(503, stopped.status().intValue());
        assertNamesNothingInternal(stopped.getMessage());
        ApiError other = OpenAiServer.generationError(new IllegalStateException("a bug in graphlane.internal"));
        assertEquals(500, other.status().intValue());
        assertNamesNothingInternal(other.getMessage());
    }
}
