package io.graphlane.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.graphlane.checkpoint.json.StrictJson;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Iterator;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** {@code graphlane inspect} run in-process on the tiny-llama fixture layouts and on corrupted copies. */
class InspectCommandTest {
    /** The fixture the checkpoint module's tests keep; Surefire runs in this module's directory. */
    private static final Path FIXTURE = Path.of("..", "checkpoint", "src", "test", "resources", "tiny-llama");

    @TempDir
    Path tmp;

    private record Run(int status, String out, String err) {
    }

    private static Run inspect(String... args) {
        CommandLine cli = GraphlaneCli.commandLine();
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        cli.setOut(new PrintWriter(out));
        cli.setErr(new PrintWriter(err));
        String[] full = Stream.concat(Stream.of("inspect"), Stream.of(args)).toArray(String[]::new);
        int status = cli.execute(full);
        return new Run(status, out.toString(), err.toString());
    }

    private Path copy(String layout) throws IOException {
        Path src = layout.isEmpty() ? FIXTURE : FIXTURE.resolve(layout);
        Path dst = Files.createDirectories(tmp.resolve(layout.isEmpty() ? "f32" : layout));
        try (Stream<Path> files = Files.list(src)) {
            for (Path f : (Iterable<Path>) files::iterator) {
                if (Files.isRegularFile(f)) {
                    Files.copy(f, dst.resolve(f.getFileName()), StandardCopyOption.REPLACE_EXISTING);
                    dst.resolve(f.getFileName()).toFile().setWritable(true);
                }
            }
        }
        return dst;
    }

    private static void assertOneLineRefusal(Run run, String... fragments) {
        assertEquals(GraphlaneCli.EXIT_USER_ERROR, run.status(), run.err());
        String err = run.err().strip();
        assertEquals(1, err.lines().count(), "exactly one line on stderr: " + err);
        assertTrue(err.startsWith("graphlane: "), err);
        assertFalse(err.contains("\tat "), "no stack trace: " + err);
        for (String f : fragments) {
            assertTrue(err.contains(f), "expected '" + f + "' in: " + err);
        }
        assertEquals("", run.out());
    }

    @Test
    void theSettingsALoadAppliesFromGenerationAndTokenizerConfigAreShown() throws IOException {
        Path dir = copy("");
        Files.writeString(dir.resolve("generation_config.json"), "{\"eos_token_id\": 2, \"temperature\": 0.6, \"top_p\": 0.9}");
        Files.writeString(dir.resolve("tokenizer_config.json"), "{\"add_bos_token\": true, \"clean_up_tokenization_spaces\": true,"
                + " \"chat_template\": \"{{ messages }}\"}");
        Run run = inspect(dir.toString());
        assertEquals(0, run.status(), run.err());
        assertTrue(run.out().contains("sampling defaults:     temperature 0.6, top_p 0.9 (generation_config.json)"), run.out());
        assertTrue(run.out().contains("special tokens added:  add_bos_token true, add_eos_token false (tokenizer_config.json)"), run.out());
        assertTrue(run.out().contains("decode clean-up:       clean_up_tokenization_spaces true"), run.out());
        assertTrue(run.out().contains("chat template:         " + dir.resolve("tokenizer_config.json") + " field 'chat_template'"), run.out());
    }

    @Test
    void anOutOfRangeGenerationDefaultIsRefusedInOneLine() throws IOException {
        Path dir = copy("");
        Files.writeString(dir.resolve("generation_config.json"), "{\"top_p\": 0}");
        Run run = inspect(dir.toString());
        assertEquals(2, run.status(), run.err());
        assertOneLineRefusal(run, "generation_config.json", "'top_p'", "(0, 1]", "found 0.0");
    }

    @Test
    void jsonCatalogueOfTheSingleFileLayout() throws IOException {
        Run run = inspect(FIXTURE.toString(), "--json");
        assertEquals(0, run.status(), run.err());
        assertEquals("", run.err());
        JsonNode root = StrictJson.mapper().readTree(run.out());
        List<String> keys = names(root.fieldNames());
        assertEquals(List.of("format", "architecture", "rope", "hidden_act", "tensor_count", "total_bytes", "tensors",
                "sampling_defaults", "special_tokens_added", "decode_clean_up", "chat_template"), keys);
        assertEquals("default (theta 10000.0)", root.get("rope").asText());
        assertEquals("silu", root.get("hidden_act").asText());
        assertEquals("none", root.get("sampling_defaults").asText());
        assertEquals("as tokenizer.json's post-processor adds them", root.get("special_tokens_added").asText());
        assertEquals("safetensors", root.get("format").asText());
        assertEquals("LlamaForCausalLM", root.get("architecture").asText());
        assertEquals(39, root.get("tensor_count").asInt());
        assertEquals(858368L, root.get("total_bytes").asLong());
        assertEquals(39, root.get("tensors").size());
        JsonNode head = root.get("tensors").get(0);
        assertEquals(List.of("name", "dtype", "shape", "bytes", "shard"), names(head.fieldNames()));
        assertEquals("lm_head.weight", head.get("name").asText());
        assertEquals("F32", head.get("dtype").asText());
        assertEquals("[256,64]", head.get("shape").toString());
        assertEquals(65536, head.get("bytes").asLong());
        assertEquals("model.safetensors", head.get("shard").asText());
        long sum = 0;
        for (JsonNode t : root.get("tensors")) {
            sum += t.get("bytes").asLong();
        }
        assertEquals(858368L, sum);
    }

    @Test
    void jsonCatalogueOfTheShardedAndBf16Layouts() throws IOException {
        JsonNode sharded = StrictJson.mapper().readTree(inspect(FIXTURE.resolve("sharded").toString(), "--json").out());
        assertEquals(39, sharded.get("tensor_count").asInt());
        assertEquals(858368L, sharded.get("total_bytes").asLong());
        boolean sawSecond = false;
        for (JsonNode t : sharded.get("tensors")) {
            sawSecond |= t.get("shard").asText().equals("model-00002-of-00002.safetensors");
            if (t.get("name").asText().equals("lm_head.weight")) {
                assertEquals("model-00001-of-00002.safetensors", t.get("shard").asText());
            }
        }
        assertTrue(sawSecond);
        JsonNode bf16 = StrictJson.mapper().readTree(inspect(FIXTURE.resolve("bf16").toString(), "--json").out());
        assertEquals(858368L / 2, bf16.get("total_bytes").asLong());
        assertEquals("BF16", bf16.get("tensors").get(3).get("dtype").asText());
    }

    @Test
    void tableShowsFormatArchitectureDtypeMixAndEveryTensor() {
        Run run = inspect(FIXTURE.resolve("sharded").toString());
        assertEquals(0, run.status(), run.err());
        String out = run.out();
        assertTrue(out.contains("format:       safetensors (2 shards)"), out);
        assertTrue(out.contains("architecture: LlamaForCausalLM (layers 4, hidden 64, heads 4, kv heads 2"), out);
        assertTrue(out.contains("rope:         default (theta 10000.0)"), out);
        assertTrue(out.contains("mlp:          silu"), out);
        assertTrue(out.contains("dtypes:       F32 ×39"), out);
        assertTrue(out.contains("tensors:      39"), out);
        assertTrue(out.contains("total bytes:  858368"), out);
        assertTrue(out.lines().anyMatch(l -> l.startsWith("model.norm.weight ") && l.contains("[64]")
                && l.contains("256") && l.endsWith("model-00002-of-00002.safetensors")), out);
        assertEquals(39 + 9 + 5, out.lines().count(), "the catalogue, then a blank line and four lines of settings");
    }

    @Test
    void aGemmaModelShowsItsAdditions() {
        Path gemma = Path.of("..", "inference", "src", "test", "resources", "hf-fixtures", "gemma2");
        Run run = inspect(gemma.toString());
        assertEquals(0, run.status(), run.err());
        assertTrue(run.out().contains("architecture: Gemma2ForCausalLM (layers 4"), run.out());
        assertTrue(run.out().contains("gemma:        query_pre_attn_scalar 24.0, attention soft cap 5.0, final soft cap 15.0, "
                + "embedding scale 8.0"), run.out());
    }

    /** inspect runs the load's checks: a config.json field the loader refuses is refused here too, in one line. */
    @Test
    void configTheLoadRefusesIsRefusedByInspect() throws IOException {
        Path dir = copy("");
        Path config = dir.resolve("config.json");
        String text = Files.readString(config);
        Files.writeString(config, text.replaceFirst("\\{", "{\"logits_scaling\": 4.0, "));
        assertOneLineRefusal(inspect(dir.toString()), config.toString(), "field 'logits_scaling'", "LlamaForCausalLM");
        Files.writeString(config, text.replaceFirst("\\{", "{\"rope_scaling\": {\"rope_type\": \"su\"}, "));
        assertOneLineRefusal(inspect(dir.toString()), "field 'rope_scaling.rope_type' is 'su'", "supported: default, linear");
        Files.writeString(config, text.replace("\"num_hidden_layers\": 4", "\"num_hidden_layers\": 1000000"));
        assertOneLineRefusal(inspect(dir.toString()), "'num_hidden_layers' is 1000000");
    }

    @Test
    void truncatedWeightsAreRefusedWithOneLineNamingTheFile() throws IOException {
        Path dir = copy("");
        Path weights = dir.resolve("model.safetensors");
        byte[] b = Files.readAllBytes(weights);
        Files.write(weights, java.util.Arrays.copyOf(b, b.length - 100));
        assertOneLineRefusal(inspect(dir.toString(), "--json"), weights.toString(), "the file is truncated");
    }

    @Test
    void corruptHeaderInAShardIsRefused() throws IOException {
        Path dir = copy("sharded");
        Path shard = dir.resolve("model-00002-of-00002.safetensors");
        byte[] b = Files.readAllBytes(shard);
        String text = new String(b, 8, 200, java.nio.charset.StandardCharsets.ISO_8859_1);
        int at = 8 + text.indexOf("\"F32\"") + 1;
        b[at] = 'X';
        Files.write(shard, b);
        assertOneLineRefusal(inspect(dir.toString()), shard.toString(), "unknown dtype \"X32\"");
    }

    @Test
    void indexEscapingTheDirectoryIsRefused() throws IOException {
        Path dir = copy("sharded");
        Path index = dir.resolve("model.safetensors.index.json");
        Files.writeString(index, Files.readString(index).replaceFirst("\"model-00001-of-00002.safetensors\"",
                "\"../model-00001-of-00002.safetensors\""));
        assertOneLineRefusal(inspect(dir.toString()), index.toString(), "contains '..'");
    }

    @Test
    void configContradictingTheWeightsIsRefusedNamingTensorAndShapes() throws IOException {
        Path dir = copy("");
        Path config = dir.resolve("config.json");
        Files.writeString(config, Files.readString(config).replace("\"num_key_value_heads\": 2", "\"num_key_value_heads\": 4"));
        assertOneLineRefusal(inspect(dir.toString()), "model.layers.0.self_attn.k_proj.weight",
                "has shape [32, 64], expected [64, 64]");
    }

    @Test
    void unsupportedArchitectureIsRefusedNamingTheSupportedOnes() throws IOException {
        Path dir = copy("bf16");
        Path config = dir.resolve("config.json");
        Files.writeString(config, Files.readString(config).replace("LlamaForCausalLM", "GPT2LMHeadModel"));
        assertOneLineRefusal(inspect(dir.toString()), config.toString(), "Qwen2ForCausalLM");
    }

    @Test
    void missingDirectoryIsRefusedAndDebugShowsTheStackTrace() {
        Path nowhere = tmp.resolve("nowhere");
        assertOneLineRefusal(inspect(nowhere.toString()), nowhere.toString(), "does not exist", "a .gguf file");
        Run debug = inspect(nowhere.toString(), "--debug");
        assertEquals(GraphlaneCli.EXIT_USER_ERROR, debug.status());
        assertTrue(debug.err().contains("\tat "), debug.err());
    }

    private static <T> List<T> names(Iterator<T> it) {
        List<T> out = new java.util.ArrayList<>();
        it.forEachRemaining(out::add);
        return out;
    }
}
