package io.graphlane.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.graphlane.inference.api.GenerationRequest;
import io.graphlane.inference.pipeline.InferencePipeline;
import io.graphlane.inference.sampling.SamplingParams;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.http.javadsl.ServerBinding;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The model directory's tokenizer and generation settings end to end over HTTP, on a copy of the tiny-chat fixture whose
 * generation_config.json sets {@code temperature 0} and whose tokenizer_config.json sets {@code add_bos_token} and
 * {@code clean_up_tokenization_spaces}: a request that leaves the temperature out decodes greedily (the reference's
 * replies), one that sets it samples; a completion prompt gets the BOS id and its echoed text is cleaned up; top_k and
 * repetition_penalty reach the sampler of the real pipeline.
 */
class TinyChatSettingsTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static Path dir;
    private static ActorTestKit testKit;
    private static InferencePipeline model;
    private static ServerBinding binding;
    private static HttpClient http;
    private static String base;
    private static JsonNode reference;

    @BeforeAll
    static void start() throws Exception {
        Path fixture = Path.of(TinyChatSettingsTest.class.getResource("/tiny-chat/config.json").toURI()).getParent();
        dir = Files.createTempDirectory("tiny-chat-settings");
        try (Stream<Path> files = Files.list(fixture)) {
            for (Path f : files.toList()) {
                Files.copy(f, dir.resolve(f.getFileName()));
            }
        }
        Files.writeString(dir.resolve("generation_config.json"), "{\"bos_token_id\": 256, \"eos_token_id\": 257, \"temperature\": 0.0}");
        ObjectNode config = (ObjectNode) JSON.readTree(dir.resolve("tokenizer_config.json").toFile());
        config.put("add_bos_token", true);
        config.put("clean_up_tokenization_spaces", true);
        JSON.writeValue(dir.resolve("tokenizer_config.json").toFile(), config);
        reference = JSON.readTree(dir.resolve("reference.json").toFile());
        testKit = ActorTestKit.create();
        model = InferencePipeline.builder().model(dir).stages(2).actorSystem(testKit.system()).build();
        binding = new OpenAiServer(testKit.system(), model).bind("127.0.0.1", 0).toCompletableFuture().get(10, TimeUnit.SECONDS);
        base = "http://127.0.0.1:" + binding.localAddress().getPort();
        http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    }

    @AfterAll
    static void stop() throws Exception {
        binding.unbind().toCompletableFuture().get(10, TimeUnit.SECONDS);
        model.close();
        testKit.shutdownTestKit();
        try (Stream<Path> files = Files.list(dir)) {
            for (Path f : files.toList()) {
                Files.delete(f);
            }
        }
        Files.delete(dir);
    }

    private static JsonNode post(String path, String body) throws Exception {
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(base + path)).timeout(Duration.ofSeconds(60))
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body)).build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(200, r.statusCode(), r.body());
        return JSON.readTree(r.body());
    }

    private static JsonNode chatCase(String name) {
        for (JsonNode c : reference.get("chat")) {
            if (c.get("name").asText().equals(name)) {
                return c;
            }
        }
        throw new AssertionError("no case " + name);
    }

    private static String chat(JsonNode c, String extra) {
        return "{\"messages\":" + c.get("messages") + ",\"max_tokens\":" + reference.get("max_tokens").asInt() + extra + "}";
    }

    private static List<Integer> ints(JsonNode array) {
        List<Integer> out = new ArrayList<>();
        array.forEach(n -> out.add(n.asInt()));
        return out;
    }

    @Test
    void theServedDefaultsAreTheGenerationConfigs() {
        assertEquals("temperature 0.0", model.generationDefaults().describe());
    }

    @Test
    void leavingTheTemperatureOutTakesTheModelsZeroAndDecodesGreedily() throws Exception {
        for (String name : List.of("single user", "system + user", "multi-turn")) {
            JsonNode c = chatCase(name);
            JsonNode choice = post("/v1/chat/completions", chat(c, "")).get("choices").get(0);
            assertEquals(ints(c.get("greedy")), ints(choice.get("token_ids")), name);
            assertEquals(c.get("greedy_text").asText(), choice.get("message").get("content").asText(), name);
        }
    }

    @Test
    void aTemperatureTheRequestSetsWinsAndTopKOneIsGreedyAgain() throws Exception {
        JsonNode c = chatCase("single user");
        List<Integer> sampled = ints(post("/v1/chat/completions", chat(c, ",\"temperature\":2,\"seed\":7")).get("choices").get(0).get("token_ids"));
        assertNotEquals(ints(c.get("greedy")), sampled, "temperature 2 over random weights strays from the greedy reply");
        List<Integer> topOne = ints(post("/v1/chat/completions", chat(c, ",\"temperature\":2,\"seed\":7,\"top_k\":1"))
                .get("choices").get(0).get("token_ids"));
        assertEquals(ints(c.get("greedy")), topOne, "top_k 1 keeps only the most likely token");
    }

    @Test
    void theRepetitionPenaltyReachesThePipelinesSampler() throws Exception {
        JsonNode c = chatCase("multi-turn");
        List<Integer> penalised = ints(post("/v1/chat/completions", chat(c, ",\"repetition_penalty\":1.3")).get("choices").get(0)
                .get("token_ids"));
        assertNotEquals(ints(c.get("greedy")), penalised, "the reference reply repeats 151, 169: the penalty breaks that");
        GenerationRequest same = new GenerationRequest(ints(c.get("ids")), reference.get("max_tokens").asInt(),
                SamplingParams.GREEDY.withRepetitionPenalty(1.3), Optional.empty());
        List<Integer> direct = model.generateAll(List.of(same), Duration.ofSeconds(60)).get(0).generatedIds();
        assertEquals(direct, penalised);
    }

    @Test
    void aCompletionPromptGetsTheBosIdAndItsEchoIsCleanedUp() throws Exception {
        JsonNode body = post("/v1/completions", "{\"prompt\":\"Hi , there .\",\"max_tokens\":1,\"echo\":true}");
        JsonNode choice = body.get("choices").get(0);
        List<Integer> ids = ints(choice.get("token_ids"));
        assertEquals(List.of(256, 72, 105, 32, 44, 32, 116, 104, 101, 114, 101, 32, 46), ids.subList(0, 13));
        assertEquals(13, body.get("usage").get("prompt_tokens").asInt());
        assertEquals(true, choice.get("text").asText().startsWith("<s>Hi, there."), choice.get("text").asText());
    }
}
