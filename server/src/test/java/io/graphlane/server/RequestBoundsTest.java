package io.graphlane.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.typesafe.config.ConfigFactory;
import io.graphlane.inference.chat.ChatTemplate;
import io.graphlane.inference.chat.ChatTemplateLimits;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * What a request body can make the server do before it generates, against a bound server: a prompt that cannot fit
 * the model is refused before it is tokenized, tokenizing never holds the dispatcher (health answers while every
 * preparation thread is held, and one request more is refused with 429), and a hostile chat template is refused
 * naming the limit it hit while the server keeps serving.
 */
class RequestBoundsTest {
    /** The scripted model's maximum sequence length times its one byte per token. */
    private static final int PROMPT_BYTES = 64;
    private static final String GREETING = "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":4}";

    private static JsonNode error(HttpResponse<String> r, int status) throws Exception {
        assertEquals(status, r.statusCode(), r.body());
        return TestServer.JSON.readTree(r.body()).get("error");
    }

    private static void assertMentions(String message, String... parts) {
        for (String part : parts) {
            assertTrue(message.contains(part), "'" + part + "' in: " + message);
        }
    }

    @Test
    void aPromptThatCannotFitIsRefusedNamingItsFieldAndTheLimitBeforeItIsTokenized() throws Exception {
        ScriptedGenerator generator = new ScriptedGenerator(8);
        generator.chatTemplate = new ChatTemplate("{% for m in messages %}{{ m['content'] }}{% endfor %}", "", "");
        CountDownLatch tokenized = new CountDownLatch(1);
        generator.tokenizing = tokenized;
        try (TestServer server = new TestServer(system -> generator)) {
            String big = "x".repeat(4 << 20);
            JsonNode e = error(server.complete("{\"prompt\":\"" + big + "\",\"max_tokens\":1}"), 400);
            assertEquals("prompt", e.get("param").asText());
            assertMentions(e.get("message").asText(), "prompt is " + (4 << 20) + " bytes", "at most " + PROMPT_BYTES + " bytes",
                    "maximum sequence length of 64 tokens");

            // In an array, the long one is named, and the short one before it is not tokenized either.
            e = error(server.complete("{\"prompt\":[\"ok\", \"" + "é".repeat(40) + "\"],\"max_tokens\":1}"), 400);
            assertEquals("prompt", e.get("param").asText());
            assertMentions(e.get("message").asText(), "prompt[1] is 80 bytes", "at most " + PROMPT_BYTES + " bytes");

            e = error(server.post("/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"},"
                    + "{\"role\":\"user\",\"content\":\"" + "y".repeat(65) + "\"}]}"), 400);
            assertEquals("messages", e.get("param").asText());
            assertMentions(e.get("message").asText(), "messages[1].content is 65 bytes", "at most " + PROMPT_BYTES + " bytes");
            assertEquals(1, tokenized.getCount(), "nothing was tokenized");

            // A prompt at the limit is tokenized; right after the refusals, normal requests are served.
            e = error(server.complete("{\"prompt\":\"" + "z".repeat(PROMPT_BYTES) + "\",\"max_tokens\":1}"), 400);
            assertMentions(e.get("message").asText(), "has 64 tokens");
            assertEquals(0, tokenized.getCount());
            assertEquals(4, server.ok("{\"prompt\":\"hello\",\"max_tokens\":4}").get("choices").get(0).get("token_ids").size());
            HttpResponse<String> chat = server.post("/v1/chat/completions", GREETING);
            assertEquals(200, chat.statusCode(), chat.body());
        }
    }

    /**
     * The actor system's dispatcher has two threads and three tokenizations are held: were they run on the
     * dispatcher, nothing would answer /health.
     */
    @Test
    void heldTokenizationsLeaveHealthAnsweringAndARequestBeyondThePoolGets429() throws Exception {
        ScriptedGenerator generator = new ScriptedGenerator(8);
        CountDownLatch release = new CountDownLatch(1);
        CountDownLatch entered = new CountDownLatch(3);
        generator.tokenizeGate = release;
        generator.tokenizing = entered;
        InputLimits threeThreadsNoQueue = InputLimits.defaults().withPreparation(3, 0);
        try (TestServer server = new TestServer(system -> generator, threeThreadsNoQueue,
                ConfigFactory.parseString("pekko.actor.default-dispatcher.fork-join-executor { parallelism-min = 2, parallelism-max = 2 }")))
        {
            List<CompletableFuture<HttpResponse<String>>> held = new ArrayList<>();
            try {
                for (int i = 0; i < 3; i++) {
                    held.add(server.postAsync("/v1/completions", "{\"prompt\":\"held " + i + "\",\"max_tokens\":2}"));
                }
                assertTrue(entered.await(30, TimeUnit.SECONDS), "three requests are tokenizing");
                HttpResponse<String> health = server.get("/health");
                assertEquals(200, health.statusCode(), health.body());

                HttpResponse<String> beyond = server.complete("{\"prompt\":\"one more\",\"max_tokens\":2}");
                JsonNode e = error(beyond, 429);
                assertEquals("overloaded", e.get("code").asText());
                assertEquals("1", beyond.headers().firstValue("Retry-After").orElse(""), "Retry-After");
                // Token-id prompts need no tokenizing, but are read on the same threads: refused too.
                error(server.complete("{\"prompt\":[1, 2],\"max_tokens\":2}"), 429);
            } finally {
                release.countDown();
            }
            for (CompletableFuture<HttpResponse<String>> r : held) {
                assertEquals(200, r.get(30, TimeUnit.SECONDS).statusCode());
            }
            assertEquals(200, server.complete("{\"prompt\":\"after\",\"max_tokens\":2}").statusCode());
            assertTrue(server.get("/metrics").body().contains("graphlane_requests_total{outcome=\"overloaded\"} 2.0"),
                    "both refusals are counted as overloaded");
        }
    }

    @Test
    void hostileChatTemplatesAreRefusedNamingTheLimitAndTheServerServesOn() throws Exception {
        ScriptedGenerator generator = new ScriptedGenerator(8);
        ChatTemplate plain = new ChatTemplate("{% for m in messages %}{{ m['content'] }}{% endfor %}", "", "");
        generator.chatTemplate = plain;
        InputLimits oneSecond = InputLimits.defaults()
                .withChatTemplate(ChatTemplateLimits.defaults().withRenderCpuTime(Duration.ofSeconds(1)));
        try (TestServer server = new TestServer(system -> generator, oneSecond, ConfigFactory.empty())) {
            HttpResponse<String> first = server.post("/v1/chat/completions", GREETING);
            assertEquals(200, first.statusCode(), first.body());
            List<String[]> hostile = List.of(
                    new String[] {"{% for a in range(1000) %}{% for b in range(1000) %}{% for c in range(1000) %}{% endfor %}{% endfor %}"
                            + "{% endfor %}", "limit of 1000 ms of CPU time"},
                    // The rendered prompt can be no longer than the model's 64 bytes of prompt text.
                    new String[] {"{% set s = 'ab' %}{% for i in range(40) %}{% set s = s ~ s %}{% endfor %}{{ s }}",
                            "limit of " + PROMPT_BYTES + " characters"},
                    new String[] {"{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}",
                            "limit of " + ChatTemplateLimits.DEFAULT_MAX_MACRO_DEPTH + " nested calls"},
                    new String[] {"{% include 'logback-test.xml' %}", "'include'"},
                    new String[] {"{% import 'logback-test.xml' as x %}", "'import'"},
                    new String[] {"{% from '/etc/passwd' import x %}", "'from'"});
            for (String[] h : hostile) {
                generator.chatTemplate = new ChatTemplate(h[0], "", "");
                JsonNode e = error(server.post("/v1/chat/completions", GREETING), 400);
                assertEquals("messages", e.get("param").asText());
                assertMentions(e.get("message").asText(), h[1]);
            }
            generator.chatTemplate = plain;
            assertEquals(200, server.get("/health").statusCode());
            JsonNode ok = TestServer.JSON.readTree(server.post("/v1/chat/completions", GREETING).body());
            assertEquals(ScriptedGenerator.expected(List.of((int) 'h', (int) 'i'), 4),
                    TestServer.ints(ok.get("choices").get(0).get("token_ids")));
        }
    }
}
