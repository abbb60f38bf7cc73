package io.graphlane.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.graphlane.checkpoint.gguf.GgmlType;
import io.graphlane.checkpoint.gguf.GgufTokenizer;
import io.graphlane.checkpoint.gguf.GgufWriter;
import io.graphlane.checkpoint.gguf.TinyLlamaGguf;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * Every command that takes a model, given the tiny-llama fixture as a GGUF file (or a directory holding one): {@code run}
 * and {@code logits} give the reference's tokens and logits, {@code inspect} prints the metadata and the tensor table,
 * {@code bench decode} measures it, {@code serve} answers a chat completion through the chat template and special tokens
 * of the file's metadata, and a truncated or hostile file, or an ambiguous directory, is refused in one line with status 2.
 */
class GgufCommandsTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Path FIXTURE = Path.of("..", "checkpoint", "src", "test", "resources", "tiny-llama");

    @TempDir
    static Path tmp;
    private static Path f32;
    private static Path q80;

    private record Run(int status, String out, String err) {
    }

    @BeforeAll
    static void write() {
        f32 = TinyLlamaGguf.write(GgmlType.F32, tmp.resolve("f32").resolve("tiny-llama.gguf"));
        q80 = TinyLlamaGguf.write(GgmlType.Q8_0, tmp.resolve("q8_0").resolve("tiny-llama-q8_0.gguf"));
    }

    private static Run cli(String... args) {
        CommandLine cli = GraphlaneCli.commandLine();
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        cli.setOut(new PrintWriter(out));
        cli.setErr(new PrintWriter(err));
        int status = cli.execute(args);
        return new Run(status, out.toString(), err.toString());
    }

    private static JsonNode reference() throws Exception {
        return JSON.readTree(FIXTURE.resolve("reference.json").toFile()).get("prompts");
    }

    private static String ids(JsonNode array) {
        List<String> parts = new ArrayList<>();
        array.forEach(n -> parts.add(n.asText()));
        return String.join(",", parts);
    }

    private static void assertOneLineRefusal(Run run, String... fragments) {
        assertEquals(GraphlaneCli.EXIT_USER_ERROR, run.status(), run.out() + run.err());
        String err = run.err().strip();
        assertEquals(1, err.lines().count(), "exactly one line on stderr: " + err);
        assertFalse(err.contains("\tat "), "no stack trace: " + err);
        for (String f : fragments) {
            assertTrue(err.contains(f), "expected '" + f + "' in: " + err);
        }
    }

    @Test
    void runOnTheFileAndOnItsDirectoryGivesTheReferenceGreedyTokens() throws Exception {
        JsonNode ref = reference();
        for (Path model : List.of(f32, f32.getParent())) {
            List<String> args = new ArrayList<>(List.of("run", "--model", model.toString(), "--stages", "2", "--max-new-tokens", "16",
                    "--temperature", "0", "--json"));
            for (JsonNode p : ref) {
                args.add("--prompt-ids");
                args.add(ids(p.get("ids")));
            }
            Run run = cli(args.toArray(String[]::new));
            assertEquals(0, run.status(), run.err());
            JsonNode out = JSON.readTree(run.out());
            assertEquals("tiny-llama", out.get("model").asText());
            for (int i = 0; i < ref.size(); i++) {
                assertEquals(ref.get(i).get("greedy_16"), out.get("requests").get(i).get("generated_ids"), model + ", prompt " + i);
            }
        }
    }

    @Test
    void logitsOfTheF32FileMatchTheReferenceOnOneAndTwoStagesAndTensorParallelTwo() throws Exception {
        JsonNode p = reference().get(2);
        for (String[] split : new String[][] {{"1", "1"}, {"2", "1"}, {"1", "2"}}) {
            Run run = cli("logits", "--model", f32.toString(), "--ids", ids(p.get("ids")), "--stages", split[0], "--tensor-parallel", split[1],
                    "--json");
            assertEquals(0, run.status(), run.err());
            JsonNode logits = JSON.readTree(run.out()).get("last_logits");
            JsonNode expected = p.get("last_logits_f32");
            assertEquals(expected.size(), logits.size());
            for (int i = 0; i < expected.size(); i++) {
                assertEquals(expected.get(i).asDouble(), logits.get(i).asDouble(), 1e-4,
                        "logit " + i + ", " + split[0] + " stage(s) x " + split[1] + " shard(s)");
            }
        }
    }

    @Test
    void inspectPrintsTheMetadataAndTheTensorTable() throws Exception {
        Run run = cli("inspect", q80.toString());
        assertEquals(0, run.status(), run.err());
        String out = run.out();
        assertTrue(out.contains("format:       gguf (v3, tiny-llama-q8_0.gguf)"), out);
        assertTrue(out.contains("architecture: LlamaForCausalLM (layers 4, hidden 64"), out);
        assertTrue(out.lines().anyMatch(l -> l.startsWith("general.architecture ") && l.contains("STRING") && l.endsWith("\"llama\"")), out);
        assertTrue(out.lines().anyMatch(l -> l.startsWith("tokenizer.ggml.tokens ") && l.contains("ARRAY") && l.endsWith("[256 × STRING]")), out);
        // 64 values of Q8_0: 2 blocks of 34 bytes a row; down's 172 columns are not whole blocks and stay F32
        assertTrue(out.lines().anyMatch(l -> l.matches("blk\\.0\\.attn_q\\.weight +Q8_0 +\\[64, 64\\] +4352")), out);
        assertTrue(out.lines().anyMatch(l -> l.matches("blk\\.0\\.ffn_down\\.weight +F32 +\\[64, 172\\] +44032")), out);
        Run json = cli("inspect", q80.toString(), "--json");
        assertEquals(0, json.status(), json.err());
        JsonNode root = JSON.readTree(json.out());
        assertEquals("gguf", root.get("format").asText());
        assertEquals("\"llama\"", root.get("metadata").get("general.architecture").asText());
        JsonNode q = null;
        for (JsonNode t : root.get("tensors")) {
            if (t.get("name").asText().equals("blk.0.attn_q.weight")) {
                q = t;
            }
        }
        assertEquals("Q8_0", q.get("type").asText());
        assertEquals(4352, q.get("bytes").asLong());
    }

    @Test
    void decodeBenchmarkMeasuresAQuantizedFile() throws Exception {
        Run run = cli("bench", "decode", "--backends", "cpu", "--model", q80.toString(), "--stages", "1", "--requests", "2",
                "--new-tokens", "4", "--warmup-seconds", "0", "--json");
        assertEquals(0, run.status(), run.err());
        JsonNode cpu = JSON.readTree(run.out()).get("results").get(0);
        assertEquals(8, cpu.get("tokens").asInt());
        assertTrue(cpu.get("decode_tokens_per_s").asDouble() > 0, run.out());
    }

    @Test
    void truncatedAndHostileFilesAndAmbiguousDirectoriesAreRefusedInOneLine() throws Exception {
        byte[] whole = Files.readAllBytes(f32);
        Path truncated = tmp.resolve("bad").resolve("truncated.gguf");
        Files.createDirectories(truncated.getParent());
        Files.write(truncated, Arrays.copyOf(whole, 200));
        // a tensor count far beyond what the file could hold
        byte[] hostile = whole.clone();
        ByteBuffer.wrap(hostile).order(ByteOrder.LITTLE_ENDIAN).putLong(8, Long.MAX_VALUE / 2);
        Path huge = tmp.resolve("bad").resolve("hostile.gguf");
        Files.write(huge, hostile);
        for (Path bad : List.of(truncated, huge)) {
            assertOneLineRefusal(cli("run", "--model", bad.toString(), "--prompt-ids", "1,2"), bad.getFileName().toString());
            assertOneLineRefusal(cli("logits", "--model", bad.toString(), "--ids", "1,2"), bad.getFileName().toString());
            assertOneLineRefusal(cli("inspect", bad.toString()), bad.getFileName().toString());
        }
        // the directory now holds two .gguf files: which one is meant is not guessed
        Run two = cli("inspect", truncated.getParent().toString());
        assertOneLineRefusal(two, "holds 2 .gguf files", "name the file itself");
        assertFalse(two.err().contains("model.safetensors"), two.err());
        Path notGguf = tmp.resolve("bad").resolve("weights.bin");
        Files.write(notGguf, new byte[] {1, 2, 3});
        assertOneLineRefusal(cli("run", "--model", notGguf.toString(), "--prompt-ids", "1"), "not a GGUF file");
    }

    /** The metadata goes through config.json's reader and checks: a bound it breaks is refused naming the file and the field. */
    @Test
    void metadataBreakingTheConfigReadersBoundsIsRefusedNamingTheFile() throws Exception {
        Files.createDirectories(tmp.resolve("ctx"));
        Path model = TinyLlamaGguf.writer(GgmlType.F32).putU32("llama.context_length", 1L << 27).write(tmp.resolve("ctx").resolve("long.gguf"));
        assertOneLineRefusal(cli("inspect", model.toString()), "long.gguf (metadata as config.json)", "'max_position_embeddings'", "134217728");
        assertOneLineRefusal(cli("logits", "--model", model.toString(), "--ids", "1"), "long.gguf (metadata as config.json)");
    }

    /**
     * A GGUF file with the tiny-chat tokenizer's special tokens and chat template in its metadata: the template renders,
     * its special tokens are single ids (the rendered {@code <s><|user|>\nhi</s>\n<|assistant|>\n} is 9 tokens; with
     * the tags spelt out in bytes it would be 33),
     * and generation answers.
     */
    @Test
    void chatCompletionOnAGgufModel() throws Exception {
        JsonNode chat = JSON.readTree(FIXTURE.resolve("..").resolve("..").resolve("..").resolve("..").resolve("..").resolve("inference")
                .resolve("src").resolve("test").resolve("resources").resolve("tiny-chat").resolve("tokenizer_config.json").toFile());
        GgufWriter w = TinyLlamaGguf.writer(GgmlType.Q8_0);
        String[] tokens = new String[256];
        JsonNode vocab = JSON.readTree(FIXTURE.resolve("tokenizer.json").toFile()).get("model").get("vocab");
        vocab.fields().forEachRemaining(e -> tokens[e.getValue().asInt()] = e.getKey());
        int[] types = new int[256];
        Arrays.fill(types, GgufTokenizer.NORMAL);
        // ids 0-3 are the bytes 0x00-0x03, which the chat text never holds: they become the chat's special tokens
        String[] specials = {"<s>", "</s>", "<|user|>", "<|assistant|>"};
        for (int i = 0; i < specials.length; i++) {
            tokens[i] = specials[i];
            types[i] = GgufTokenizer.CONTROL;
        }
        w.putStrings("tokenizer.ggml.tokens", tokens).putInts("tokenizer.ggml.token_type", types)
                .putU32("tokenizer.ggml.bos_token_id", 0).putU32("tokenizer.ggml.eos_token_id", 1)
                .putBool("tokenizer.ggml.add_bos_token", false)
                .put("tokenizer.chat_template", chat.get("chat_template").asText());
        Files.createDirectories(tmp.resolve("chat"));
        Path model = w.write(tmp.resolve("chat").resolve("tiny-chat.gguf"));
        // the metadata's EOS id ends generation
        assertEquals(java.util.Set.of(1), io.graphlane.inference.model.ModelDirectory.open(model).eosTokenIds());
        ServeCommand command = new ServeCommand();
        command.model = model;
        command.stages = 2;
        command.host = "127.0.0.1";
        command.port = 0;
        try (ServeCommand.Running server = command.start()) {
            HttpResponse<String> r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
                            URI.create("http://127.0.0.1:" + server.port() + "/v1/chat/completions"))
                    .timeout(Duration.ofSeconds(60)).header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofString("{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
                            + "\"max_tokens\":4,\"temperature\":0}")).build(), HttpResponse.BodyHandlers.ofString());
            assertEquals(200, r.statusCode(), r.body());
            JsonNode body = JSON.readTree(r.body());
            assertEquals("tiny-chat", body.get("model").asText());
            assertEquals(9, body.get("usage").get("prompt_tokens").asInt(), r.body());
            assertEquals("assistant", body.get("choices").get(0).get("message").get("role").asText());
            assertTrue(body.get("usage").get("completion_tokens").asInt() >= 1, r.body());
        }
    }
}
