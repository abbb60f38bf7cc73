package io.graphlane.inference.gguf;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.graphlane.checkpoint.gguf.GgufMetadata;
import io.graphlane.checkpoint.gguf.GgufTokenizer;
import io.graphlane.checkpoint.gguf.GgufValue;
import io.graphlane.checkpoint.gguf.GgufValueType;
import io.graphlane.inference.tokenizer.TextTokenizer;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A tokenizer.json converted from GGUF tokenizer metadata loads in the project's tokenizer (DJL's
 * Hugging Face tokenizers) and encodes to the ids the vocabulary gives: SentencePiece merges by score
 * with byte fallback and the BOS the metadata asks for, and byte-level BPE with its merges, the Llama 3
 * split and a control token.
 */
class GgufTokenizerLoadTest {
    private static final String SPACE = "\u2581";

    @TempDir
    Path tmp;

    private Path write(Map<String, GgufValue> m) throws IOException {
        Path file = tmp.resolve("tokenizer.json");
        new ObjectMapper().writeValue(file.toFile(), GgufTokenizer.toTokenizerJson(new GgufMetadata(Path.of("t.gguf"), m)));
        return file;
    }

    @Test
    void sentencePieceVocabularyEncodesByScoreWithByteFallback() throws IOException {
        List<String> tokens = new ArrayList<>(List.of("<unk>", "<s>", "</s>"));
        List<Integer> types = new ArrayList<>(List.of(2, 3, 3));
        for (int b = 0; b < 256; b++) {
            tokens.add(String.format("<0x%02X>", b));
            types.add(6);
        }
        int first = tokens.size();
        String[] pieces = {SPACE, "h", "e", "l", "o", "w", "r", "d", "he", "ll", "llo", "hello", SPACE + "hello", SPACE + "w",
            "or", SPACE + "wor", "ld", SPACE + "world"};
        float[] pieceScores = {0, 0, 0, 0, 0, 0, 0, 0, -1, -2, -3, -4, -5, -6, -7, -8, -9, -10};
        float[] scores = new float[first + pieces.length];
        int[] t = new int[first + pieces.length];
        for (int i = 0; i < first; i++) {
            t[i] = types.get(i);
        }
        for (int i = 0; i < pieces.length; i++) {
            tokens.add(pieces[i]);
            scores[first + i] = pieceScores[i];
            t[first + i] = 1;
        }
        Map<String, GgufValue> m = new LinkedHashMap<>();
        m.put("tokenizer.ggml.model", GgufValue.scalar(GgufValueType.STRING, "llama"));
        m.put("tokenizer.ggml.tokens", GgufValue.array(GgufValueType.STRING, tokens.toArray(new String[0])));
        m.put("tokenizer.ggml.scores", GgufValue.array(GgufValueType.FLOAT32, scores));
        m.put("tokenizer.ggml.token_type", GgufValue.array(GgufValueType.INT32, t));
        m.put("tokenizer.ggml.bos_token_id", GgufValue.scalar(GgufValueType.UINT32, 1L));
        m.put("tokenizer.ggml.eos_token_id", GgufValue.scalar(GgufValueType.UINT32, 2L));
        m.put("tokenizer.ggml.unknown_token_id", GgufValue.scalar(GgufValueType.UINT32, 0L));
        m.put("tokenizer.ggml.add_bos_token", GgufValue.scalar(GgufValueType.BOOL, true));
        int hello = tokens.indexOf(SPACE + "hello");
        int world = tokens.indexOf(SPACE + "world");
        int space = tokens.indexOf(SPACE);
        int he = tokens.indexOf("he");
        int l = tokens.indexOf("l");
        try (TextTokenizer tok = TextTokenizer.load(write(m), true)) {
            // ▁ h e l l o ▁ w o r l d merges he, ll, llo, hello, ▁hello, ▁w, or, ▁wor, ld, ▁world in score order
            assertArrayEquals(new int[] {1, hello, world}, tok.encode("hello world"));
            // é is no piece: its UTF-8 bytes C3 A9 fall back to <0xC3> <0xA9>
            assertArrayEquals(new int[] {1, space, 3 + 0xC3, 3 + 0xA9}, tok.encode("\u00e9"));
            // "hel" stops at he + l: no piece "hel"
            assertArrayEquals(new int[] {1, space, he, l}, tok.encode("hel"));
            assertEquals("hello world", tok.decodeSkippingSpecialTokens(new int[] {1, hello, world}));
        }
    }

    /** GPT-2's byte-to-character map. */
    private static String byteChar(int b) {
        int n = 0;
        for (int i = 0; i <= b; i++) {
            boolean printable = (i >= '!' && i <= '~') || (i >= 0xA1 && i <= 0xAC) || (i >= 0xAE && i <= 0xFF);
            if (i == b) {
                return String.valueOf((char) (printable ? b : 256 + n));
            }
            if (!printable) {
                n++;
            }
        }
        throw new IllegalStateException();
    }

    @Test
    void byteLevelVocabularyEncodesWithItsMergesAndControlTokens() throws IOException {
        List<String> tokens = new ArrayList<>();
        for (int b = 0; b < 256; b++) {
            tokens.add(byteChar(b));
        }
        tokens.addAll(List.of("he", "ll", "\u0120w", "<|eot_id|>"));
        int[] types = new int[tokens.size()];
        java.util.Arrays.fill(types, 1);
        types[259] = 3;
        Map<String, GgufValue> m = new LinkedHashMap<>();
        m.put("tokenizer.ggml.model", GgufValue.scalar(GgufValueType.STRING, "gpt2"));
        m.put("tokenizer.ggml.pre", GgufValue.scalar(GgufValueType.STRING, "llama-bpe"));
        m.put("tokenizer.ggml.tokens", GgufValue.array(GgufValueType.STRING, tokens.toArray(new String[0])));
        m.put("tokenizer.ggml.token_type", GgufValue.array(GgufValueType.INT32, types));
        m.put("tokenizer.ggml.merges", GgufValue.array(GgufValueType.STRING, new String[] {"h e", "l l", "\u0120 w"}));
        m.put("tokenizer.ggml.eos_token_id", GgufValue.scalar(GgufValueType.UINT32, 259L));
        try (TextTokenizer tok = TextTokenizer.load(write(m), true)) {
            assertArrayEquals(new int[] {256, 257, 'o', 259, 258, 'o'}, tok.encode("hello<|eot_id|> wo"));
            assertEquals("hello wo", tok.decodeSkippingSpecialTokens(new int[] {256, 257, 'o', 259, 258, 'o'}));
        }
    }
}
