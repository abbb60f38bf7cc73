package io.graphlane.inference.tokenizer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.core.GraphlaneException;
import io.graphlane.inference.model.Fixture;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The fixture's and the demo's byte-level tokenizers through DJL, and streaming decoding of partial UTF-8. */
class TextTokenizerTest {
    private static final String MIXED = "naïve café — 😀 ok";

    @Test
    void fixtureTokenizerMapsEachByteToItsOwnId() {
        try (TextTokenizer tokenizer = TextTokenizer.load(Fixture.dir(""), false)) {
            int[] ids = tokenizer.encode("The quick brown fox");
            assertArrayEquals(new int[] {84, 104, 101, 32, 113, 117, 105, 99, 107, 32, 98, 114, 111, 119, 110, 32, 102, 111, 120}, ids);
            assertEquals("The quick brown fox", tokenizer.decode(ids));
            assertArrayEquals(unsignedBytes(MIXED), tokenizer.encode(MIXED));
            assertEquals(MIXED, tokenizer.decode(tokenizer.encode(MIXED)));
        }
    }

    /**
     * On a host with a CUDA driver DJL would otherwise choose its CUDA build of the native library and download it, which
     * fails offline; the CPU build ships in the tokenizers jar. Given settings are left alone.
     */
    @Test
    void loadingAsksDjlForTheCpuBuildOfItsNativeLibraryUnlessTheSettingIsGiven() {
        try (TextTokenizer tokenizer = TextTokenizer.load(Fixture.dir(""), false)) {
            assertEquals(84, tokenizer.encode("T")[0]);
        }
        String given = System.getenv(TextTokenizer.FLAVOR_SETTING);
        assertEquals(given == null ? "cpu" : null, System.getProperty(TextTokenizer.FLAVOR_SETTING),
                TextTokenizer.FLAVOR_SETTING + " (environment: " + given + ")");
    }

    @Test
    void generatedByteLevelTokenizerBehavesLikeTheFixtures(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("tokenizer.json");
        Files.writeString(file, ByteLevelTokenizerJson.render());
        try (TextTokenizer generated = TextTokenizer.load(file, true); TextTokenizer fixture = TextTokenizer.load(Fixture.dir(""), true)) {
            int[] all = new int[256];
            for (int b = 0; b < 256; b++) {
                all[b] = b;
            }
            assertEquals(fixture.decode(all), generated.decode(all));
            assertArrayEquals(unsignedBytes(MIXED), generated.encode(MIXED));
            assertArrayEquals(fixture.encode("\u0000\t\n\u00ff"), generated.encode("\u0000\t\n\u00ff"));
        }
    }

    @Test
    void streamingNeverEmitsAPartialCharacterAndAddsUpToTheWholeText() {
        try (TextTokenizer tokenizer = TextTokenizer.load(Fixture.dir(""), false)) {
            StreamingDecoder stream = tokenizer.streamingDecoder();
            StringBuilder text = new StringBuilder();
            int emptyPieces = 0;
            for (int id : tokenizer.encode(MIXED)) {
                String piece = stream.next(id);
                assertFalse(piece.contains("\uFFFD"), "piece '" + piece + "' holds a partial character");
                emptyPieces += piece.isEmpty() ? 1 : 0;
                text.append(piece);
            }
            text.append(stream.flush());
            assertEquals(MIXED, text.toString());
            // ï and é are 2 bytes, — is 3, 😀 is 4: each holds back all but its last byte
            assertEquals(1 + 1 + 2 + 3, emptyPieces, "bytes held back until their character completed");
        }
    }

    @Test
    void aStreamEndingInsideACharacterFlushesAReplacementInsteadOfFailing() {
        try (TextTokenizer tokenizer = TextTokenizer.load(Fixture.dir(""), false)) {
            StreamingDecoder stream = tokenizer.streamingDecoder();
            assertEquals("a", stream.next('a'));
            assertEquals("", stream.next(0xF0));
            assertEquals("", stream.next(0x9F));
            assertEquals("\uFFFD", stream.flush().replaceAll("\uFFFD+", "\uFFFD"));
        }
    }

    @Test
    void aMissingTokenizerIsNamed(@TempDir Path dir) {
        GraphlaneException e = assertThrows(GraphlaneException.class, () -> TextTokenizer.load(dir, true));
        assertTrue(e.getMessage().contains(dir.resolve("tokenizer.json").toString()), e.getMessage());
    }

    @Test
    void anUnreadableTokenizerIsNamed(@TempDir Path dir) throws Exception {
        Files.writeString(dir.resolve("tokenizer.json"), "{not json");
        GraphlaneException e = assertThrows(GraphlaneException.class, () -> TextTokenizer.load(dir, true));
        assertTrue(e.getMessage().startsWith("tokenizer: cannot load " + dir.resolve("tokenizer.json")), e.getMessage());
    }

    @Test
    void theLongestTokenComesFromTheVocabularyAndTheAddedTokens(@TempDir Path dir) throws Exception {
        // Byte-level: each byte is stored as one character of one or two UTF-8 bytes (a space as U+0120).
        try (TextTokenizer bytes = TextTokenizer.load(Fixture.dir(""), false)) {
            assertEquals(2, bytes.maxTokenBytes());
        }
        // The same bytes plus the added tokens <s>, </s>, <|user|> and <|assistant|>.
        Path chat = Path.of(TextTokenizerTest.class.getResource("/tiny-chat/tokenizer.json").toURI());
        try (TextTokenizer withAdded = TextTokenizer.load(chat, false)) {
            assertEquals("<|assistant|>".length(), withAdded.maxTokenBytes());
        }
        // A Unigram vocabulary lists [piece, score] pairs; a SentencePiece space is the three-byte U+2581.
        Path unigram = dir.resolve("tokenizer.json");
        Files.writeString(unigram, "{\"added_tokens\": [{\"id\": 0, \"content\": \"<unk>\"}], \"normalizer\": null,"
                + " \"model\": {\"type\": \"Unigram\", \"unk_id\": 0, \"vocab\": [[\"<unk>\", 0.0], [\"\u2581hello\", -1.5], [\"x\", -2]]}}");
        assertEquals(3 + 5, VocabularyBytes.longestToken(unigram));
    }

    /**
     * DJL's own encode builds Java objects for every token from inside its native call, and an allocation that fails
     * there aborts the JVM: a megabyte of text (a million tokens here) did so under this heap. Asking for the ids alone
     * needs a few megabytes. In a JVM of its own, since an abort would end this one.
     */
    @Test
    void aMegabyteOfTextEncodesUnderASmallHeap() throws Exception {
        int bytes = 1 << 20;
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        Process child = new ProcessBuilder(List.of(java.toString(), "-Xmx64m", "-cp", System.getProperty("java.class.path"),
                LargeTextEncoding.class.getName(), Fixture.dir("").resolve("tokenizer.json").toString(), Integer.toString(bytes)))
                .redirectErrorStream(true).start();
        String output;
        try {
            assertTrue(child.waitFor(120, TimeUnit.SECONDS), "the child JVM ended");
            output = new String(child.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        } finally {
            child.destroyForcibly();
        }
        assertEquals(0, child.exitValue(), output);
        assertTrue(output.contains("ids " + bytes), output);
    }

    private static int[] unsignedBytes(String text) {
        byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
        int[] ids = new int[bytes.length];
        for (int i = 0; i < bytes.length; i++) {
            ids[i] = bytes[i] & 0xFF;
        }
        return ids;
    }
}
