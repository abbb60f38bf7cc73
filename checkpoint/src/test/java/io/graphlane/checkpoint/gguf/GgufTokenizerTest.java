package io.graphlane.checkpoint.gguf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The tokenizer metadata → tokenizer.json / tokenizer_config.json conversion, as pure functions. */
class GgufTokenizerTest {
    private static final Path FILE = Path.of("t.gguf");

    /** A SentencePiece vocabulary: unk, bos, eos, 256 byte pieces, then pieces with scores. */
    static Map<String, GgufValue> spm() {
        List<String> tokens = new ArrayList<>(List.of("<unk>", "<s>", "</s>"));
        List<Integer> types = new ArrayList<>(List.of(GgufTokenizer.UNKNOWN, GgufTokenizer.CONTROL, GgufTokenizer.CONTROL));
        for (int b = 0; b < 256; b++) {
            tokens.add(String.format("<0x%02X>", b));
            types.add(GgufTokenizer.BYTE);
        }
        String[] pieces = {"\u2581", "h", "e", "l", "o", "w", "r", "d", "he", "ll", "llo", "hello", "\u2581hello", "\u2581w",
            "or", "\u2581wor", "ld", "\u2581world"};
        float[] pieceScores = {0, 0, 0, 0, 0, 0, 0, 0, -1, -2, -3, -4, -5, -6, -7, -8, -9, -10};
        List<Float> scores = new ArrayList<>();
        for (int i = 0; i < tokens.size(); i++) {
            scores.add(0f);
        }
        for (int i = 0; i < pieces.length; i++) {
            tokens.add(pieces[i]);
            types.add(GgufTokenizer.NORMAL);
            scores.add(pieceScores[i]);
        }
        Map<String, GgufValue> m = new LinkedHashMap<>();
        m.put("tokenizer.ggml.model", GgufValue.scalar(GgufValueType.STRING, "llama"));
        m.put("tokenizer.ggml.tokens", GgufValue.array(GgufValueType.STRING, tokens.toArray(new String[0])));
        float[] s = new float[scores.size()];
        int[] t = new int[types.size()];
        for (int i = 0; i < s.length; i++) {
            s[i] = scores.get(i);
            t[i] = types.get(i);
        }
        m.put("tokenizer.ggml.scores", GgufValue.array(GgufValueType.FLOAT32, s));
        m.put("tokenizer.ggml.token_type", GgufValue.array(GgufValueType.INT32, t));
        m.put("tokenizer.ggml.bos_token_id", GgufValue.scalar(GgufValueType.UINT32, 1L));
        m.put("tokenizer.ggml.eos_token_id", GgufValue.scalar(GgufValueType.UINT32, 2L));
        m.put("tokenizer.ggml.unknown_token_id", GgufValue.scalar(GgufValueType.UINT32, 0L));
        m.put("tokenizer.ggml.add_bos_token", GgufValue.scalar(GgufValueType.BOOL, true));
        m.put("tokenizer.ggml.add_eos_token", GgufValue.scalar(GgufValueType.BOOL, false));
        m.put("tokenizer.chat_template", GgufValue.scalar(GgufValueType.STRING, "{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}"));
        return m;
    }

    private static GgufMetadata meta(Map<String, GgufValue> m) {
        return new GgufMetadata(FILE, m);
    }

    private static int id(JsonNode json, String token) {
        return json.get("model").get("vocab").get(token).asInt();
    }

    @Test
    void sentencePieceBecomesAByteFallbackBpeWithMergesRankedByScore() {
        ObjectNode json = GgufTokenizer.toTokenizerJson(meta(spm()));
        JsonNode model = json.get("model");
        assertEquals("BPE", model.get("type").asText());
        assertTrue(model.get("byte_fallback").asBoolean());
        assertTrue(model.get("fuse_unk").asBoolean());
        assertEquals("<unk>", model.get("unk_token").asText());
        assertEquals(3 + 256 + 18, model.get("vocab").size());
        assertEquals(3 + 0x41, id(json, "<0x41>"));
        // every piece that splits into two pieces gives a merge, highest score first
        assertEquals("[[\"h\",\"e\"],[\"l\",\"l\"],[\"ll\",\"o\"],[\"he\",\"llo\"],[\"\u2581\",\"hello\"],[\"\u2581\",\"w\"],"
                + "[\"o\",\"r\"],[\"\u2581w\",\"or\"],[\"l\",\"d\"],[\"\u2581wor\",\"ld\"]]", model.get("merges").toString());
        assertEquals("Prepend", json.get("normalizer").get("normalizers").get(0).get("type").asText());
        assertEquals("\u2581", json.get("normalizer").get("normalizers").get(0).get("prepend").asText());
        JsonNode added = json.get("added_tokens");
        assertEquals(3, added.size());
        assertEquals("<s>", added.get(1).get("content").asText());
        assertTrue(added.get(1).get("special").asBoolean());
        JsonNode single = json.get("post_processor").get("single");
        assertEquals("<s>", single.get(0).get("SpecialToken").get("id").asText());
        assertEquals("A", single.get(1).get("Sequence").get("id").asText());
        assertEquals(2, single.size(), "no EOS appended");
        assertEquals("[1]", json.get("post_processor").get("special_tokens").get("<s>").get("ids").toString());
    }

    @Test
    void withoutASpacePrefixTheNormalizerOnlyReplacesSpaces() {
        Map<String, GgufValue> m = spm();
        m.put("tokenizer.ggml.add_space_prefix", GgufValue.scalar(GgufValueType.BOOL, false));
        ObjectNode json = GgufTokenizer.toTokenizerJson(meta(m));
        assertEquals(1, json.get("normalizer").get("normalizers").size());
        assertEquals("Replace", json.get("normalizer").get("normalizers").get(0).get("type").asText());
        JsonNode decoders = json.get("decoder").get("decoders");
        assertEquals(3, decoders.size(), "no Strip of a prefix space that was never added");
    }

    @Test
    void tokenizerConfigCarriesSpecialTokensFlagsAndTheChatTemplate() {
        ObjectNode c = GgufTokenizer.toTokenizerConfig(meta(spm()));
        assertEquals("<s>", c.get("bos_token").asText());
        assertEquals("</s>", c.get("eos_token").asText());
        assertEquals("<unk>", c.get("unk_token").asText());
        assertTrue(c.get("add_bos_token").asBoolean());
        assertFalse(c.get("add_eos_token").asBoolean());
        assertEquals("{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}", c.get("chat_template").asText());
    }

    static Map<String, GgufValue> gpt2(String pre) {
        List<String> tokens = new ArrayList<>();
        for (int b = 0; b < 256; b++) {
            tokens.add(byteChar(b));
        }
        tokens.addAll(List.of("he", "ll", "\u0120w", "<|endoftext|>"));
        int[] types = new int[tokens.size()];
        java.util.Arrays.fill(types, GgufTokenizer.NORMAL);
        types[tokens.size() - 1] = GgufTokenizer.CONTROL;
        Map<String, GgufValue> m = new LinkedHashMap<>();
        m.put("tokenizer.ggml.model", GgufValue.scalar(GgufValueType.STRING, "gpt2"));
        m.put("tokenizer.ggml.pre", GgufValue.scalar(GgufValueType.STRING, pre));
        m.put("tokenizer.ggml.tokens", GgufValue.array(GgufValueType.STRING, tokens.toArray(new String[0])));
        m.put("tokenizer.ggml.token_type", GgufValue.array(GgufValueType.INT32, types));
        m.put("tokenizer.ggml.merges", GgufValue.array(GgufValueType.STRING, new String[] {"h e", "l l", "\u0120 w"}));
        m.put("tokenizer.ggml.eos_token_id", GgufValue.scalar(GgufValueType.UINT32, (long) tokens.size() - 1));
        m.put("tokenizer.ggml.bos_token_id", GgufValue.scalar(GgufValueType.UINT32, (long) tokens.size() - 1));
        return m;
    }

    /** GPT-2's byte-to-character map: printable bytes stand for themselves, the others for 256 + their rank. */
    static String byteChar(int b) {
        boolean printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
        if (printable) {
            return String.valueOf((char) b);
        }
        int n = 0;
        for (int i = 0; i < b; i++) {
            if (!((i >= '!' && i <= '~') || (i >= 0xA1 && i <= 0xAC) || (i >= 0xAE && i <= 0xFF))) {
                n++;
            }
        }
        return String.valueOf((char) (256 + n));
    }

    @Test
    void gpt2KeepsTokensAndMergesAndSplitsAsItsPreTokenizerSays() {
        ObjectNode json = GgufTokenizer.toTokenizerJson(meta(gpt2("llama-bpe")));
        JsonNode model = json.get("model");
        assertFalse(model.get("byte_fallback").asBoolean());
        assertTrue(model.get("ignore_merges").asBoolean());
        assertEquals("[[\"h\",\"e\"],[\"l\",\"l\"],[\"\u0120\",\"w\"]]", model.get("merges").toString());
        JsonNode pre = json.get("pre_tokenizer");
        assertEquals("Split", pre.get("pretokenizers").get(0).get("type").asText());
        assertTrue(pre.get("pretokenizers").get(0).get("pattern").get("Regex").asText().contains("\\p{N}{1,3}"));
        assertEquals("ByteLevel", pre.get("pretokenizers").get(1).get("type").asText());
        assertEquals(1, json.get("added_tokens").size());
        assertEquals(1, json.get("post_processor").get("single").size(), "gpt2 adds no BOS unless asked");
        assertEquals("ByteLevel", GgufTokenizer.toTokenizerJson(meta(gpt2("default"))).get("pre_tokenizer").get("type").asText());
        assertTrue(GgufTokenizer.toTokenizerJson(meta(gpt2("qwen2"))).get("pre_tokenizer").toString().contains("\\\\p{N}|"));
        assertEquals("\u0120", byteChar(' '));
        assertEquals("\u0100", byteChar(0));
    }

    private static String refusal(Map<String, GgufValue> m) {
        GgufFormatException e = assertThrows(GgufFormatException.class, () -> GgufTokenizer.toTokenizerJson(meta(m)));
        assertTrue(e.getMessage().startsWith("t.gguf: "), e.getMessage());
        return e.getMessage().substring("t.gguf: ".length());
    }

    @Test
    void refusals() {
        Map<String, GgufValue> m = spm();
        m.put("tokenizer.ggml.model", GgufValue.scalar(GgufValueType.STRING, "bert"));
        assertEquals("metadata 'tokenizer.ggml.model' is \"bert\", expected llama (SentencePiece) or gpt2 (byte-level BPE)",
                refusal(m));
        m = spm();
        m.put("tokenizer.ggml.scores", GgufValue.array(GgufValueType.FLOAT32, new float[3]));
        assertEquals("metadata 'tokenizer.ggml.scores' has 3 entries, expected 277 (one per token of 'tokenizer.ggml.tokens')",
                refusal(m));
        m = spm();
        m.put("tokenizer.ggml.bos_token_id", GgufValue.scalar(GgufValueType.UINT32, 9999L));
        assertEquals("metadata 'tokenizer.ggml.bos_token_id' is 9999, expected 0 to 276", refusal(m));
        m = gpt2("falcon");
        assertEquals("metadata 'tokenizer.ggml.pre' is \"falcon\", expected one of default, gpt2, llama-bpe, llama3, qwen2",
                refusal(m));
        m = gpt2("default");
        m.put("tokenizer.ggml.merges", GgufValue.array(GgufValueType.STRING, new String[] {"h e", "q z"}));
        assertEquals("metadata 'tokenizer.ggml.merges'[1] \"q z\" names a token that is not in 'tokenizer.ggml.tokens'",
                refusal(m));
        m.put("tokenizer.ggml.merges", GgufValue.array(GgufValueType.STRING, new String[] {"he"}));
        assertEquals("metadata 'tokenizer.ggml.merges'[0] is \"he\", expected two tokens separated by one space", refusal(m));
        m = gpt2("default");
        m.put("tokenizer.ggml.tokens", GgufValue.array(GgufValueType.STRING, new String[] {"a", "b", "a"}));
        m.remove("tokenizer.ggml.token_type");
        m.remove("tokenizer.ggml.eos_token_id");
        m.remove("tokenizer.ggml.bos_token_id");
        assertEquals("metadata 'tokenizer.ggml.tokens' holds \"a\" twice (ids 0 and 2); a tokenizer.json vocabulary maps each"
                + " token once", refusal(m));
    }
}
