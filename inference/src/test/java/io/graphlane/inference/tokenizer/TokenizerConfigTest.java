package io.graphlane.inference.tokenizer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.graphlane.core.GraphlaneException;
import io.graphlane.inference.api.TokenCodec;
import io.graphlane.inference.chat.ChatMessage;
import io.graphlane.inference.chat.ChatTemplate;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * tokenizer_config.json as transformers applies it, on the tiny-chat tokenizer (ids 0–255 are the bytes, 256 {@code <s>},
 * 257 {@code </s>}): add_bos_token / add_eos_token against tokenizer.json's post-processor, clean_up_tokenization_spaces
 * on decode (whole and streamed), and where the chat template comes from.
 */
class TokenizerConfigTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    /** A post-processor that adds {@code <s>} before the text, as Llama's tokenizer.json files carry. */
    private static final String BOS_TEMPLATE = "{\"type\": \"TemplateProcessing\","
            + " \"single\": [{\"SpecialToken\": {\"id\": \"<s>\", \"type_id\": 0}}, {\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}],"
            + " \"pair\": [{\"SpecialToken\": {\"id\": \"<s>\", \"type_id\": 0}}, {\"Sequence\": {\"id\": \"A\", \"type_id\": 0}},"
            + " {\"Sequence\": {\"id\": \"B\", \"type_id\": 1}}],"
            + " \"special_tokens\": {\"<s>\": {\"id\": \"<s>\", \"ids\": [256], \"tokens\": [\"<s>\"]}}}";

    @TempDir
    Path dir;

    @BeforeEach
    void copyTokenizer() throws Exception {
        Files.copy(Path.of(TokenizerConfigTest.class.getResource("/tiny-chat/tokenizer.json").toURI()), dir.resolve("tokenizer.json"));
    }

    private void config(String json) throws Exception {
        Files.writeString(dir.resolve(TokenizerConfig.FILE_NAME), json);
    }

    private void postProcessor(String json) throws Exception {
        Path file = dir.resolve("tokenizer.json");
        ObjectNode root = (ObjectNode) JSON.readTree(file.toFile());
        root.set("post_processor", JSON.readTree(json));
        JSON.writeValue(file.toFile(), root);
    }

    private int[] encode(String text) {
        try (TextTokenizer t = TextTokenizer.forModel(dir)) {
            return t.encode(text);
        }
    }

    @Test
    void addBosTokenTrueAddsTheBosIdWhereTheTokenizerJsonAddsNothing() throws Exception {
        config("{\"bos_token\": \"<s>\", \"eos_token\": \"</s>\", \"add_bos_token\": true}");
        assertArrayEquals(new int[] {256, 72, 105}, encode("Hi"));
    }

    @Test
    void addEosTokenTrueAddsTheEosIdLast() throws Exception {
        config("{\"bos_token\": \"<s>\", \"eos_token\": \"</s>\", \"add_bos_token\": true, \"add_eos_token\": true}");
        assertArrayEquals(new int[] {256, 72, 105, 257}, encode("Hi"));
        config("{\"bos_token\": \"<s>\", \"eos_token\": \"</s>\", \"add_eos_token\": true}");
        assertArrayEquals(new int[] {72, 105, 257}, encode("Hi"), "add_bos_token left out counts as false once a flag is named");
    }

    @Test
    void withoutFlagsTheTokenizerJsonPostProcessorDecides() throws Exception {
        postProcessor(BOS_TEMPLATE);
        config("{\"bos_token\": \"<s>\", \"eos_token\": \"</s>\"}");
        assertArrayEquals(new int[] {256, 72, 105}, encode("Hi"));
        Files.delete(dir.resolve(TokenizerConfig.FILE_NAME));
        assertArrayEquals(new int[] {256, 72, 105}, encode("Hi"), "no tokenizer_config.json at all");
    }

    @Test
    void addBosTokenFalseReplacesAPostProcessorThatAddsTheBos() throws Exception {
        postProcessor(BOS_TEMPLATE);
        config("{\"bos_token\": \"<s>\", \"eos_token\": \"</s>\", \"add_bos_token\": false}");
        assertArrayEquals(new int[] {72, 105}, encode("Hi"));
    }

    @Test
    void aFlagWithoutItsTokenAddsNothing() throws Exception {
        config("{\"add_bos_token\": true}");
        assertArrayEquals(new int[] {72, 105}, encode("Hi"));
    }

    @Test
    void aBosTokenThatIsNotOneTokenIsRefusedNamingTheField() throws Exception {
        config("{\"bos_token\": \"<bos>\", \"add_bos_token\": true}");
        GraphlaneException e = assertThrows(GraphlaneException.class, () -> encode("Hi"));
        assertTrue(e.getMessage().contains("tokenizer_config.json: field 'bos_token'") && e.getMessage().contains("add_bos_token")
                && e.getMessage().contains("5 tokens"), e.getMessage());
    }

    @Test
    void aFlagOfTheWrongKindIsRefusedNamingFileAndField() throws Exception {
        config("{\"add_bos_token\": \"yes\"}");
        GraphlaneException e = assertThrows(GraphlaneException.class, () -> TokenizerConfig.read(dir));
        assertTrue(e.getMessage().contains("tokenizer_config.json: field 'add_bos_token' must be true or false, found \"yes\""),
                e.getMessage());
    }

    @Test
    void cleanUpTokenizationSpacesAppliesOnDecode() throws Exception {
        String text = "Hello , world . I do n't know ' bout it ; it 's fine ?";
        String cleaned = "Hello, world. I don't know'bout it ; it's fine?";
        config("{\"clean_up_tokenization_spaces\": true}");
        try (TextTokenizer t = TextTokenizer.forModel(dir)) {
            int[] ids = t.encode(text);
            assertEquals(cleaned, t.decode(ids));
            assertEquals(cleaned, t.decodeSkippingSpecialTokens(ids));
            assertEquals(cleaned, streamed(TokenCodec.of(t, 257), ids));
        }
        config("{\"clean_up_tokenization_spaces\": false}");
        try (TextTokenizer t = TextTokenizer.forModel(dir)) {
            assertEquals(text, t.decode(t.encode(text)), "false keeps the spaces");
        }
        config("{}");
        try (TextTokenizer t = TextTokenizer.forModel(dir)) {
            assertEquals(text, t.decode(t.encode(text)), "left out counts as false");
        }
    }

    @Test
    void streamedCleanUpAddsUpToTheWholeCleanUpForEveryCut() {
        String text = "a , b ' c n't x 'm 's 've 're ! ? . done , ' ' end .";
        for (int step = 1; step <= 5; step++) {
            CleanUpSpaces.Stream stream = new CleanUpSpaces.Stream();
            StringBuilder out = new StringBuilder();
            for (int i = 0; i < text.length(); i += step) {
                out.append(stream.next(text.substring(i, Math.min(text.length(), i + step))));
            }
            out.append(stream.flush());
            assertEquals(CleanUpSpaces.clean(text), out.toString(), "pieces of " + step);
        }
    }

    private static String streamed(TokenCodec codec, int[] ids) {
        var decoder = codec.contentStreamingDecoder();
        StringBuilder out = new StringBuilder();
        for (int id : ids) {
            out.append(decoder.next(id));
        }
        return out.append(decoder.flush()).toString();
    }

    @Test
    void theChatTemplateComesFromTheConfigAsAStringOrTheDefaultOfAList() throws Exception {
        config("{\"bos_token\": \"<s>\", \"chat_template\": \"{{ bos_token }}S\"}");
        assertEquals("<s>S", ChatTemplate.load(dir).orElseThrow().render(List.of(), true));
        config("{\"eos_token\": \"</s>\", \"chat_template\": [{\"name\": \"rag\", \"template\": \"R\"},"
                + " {\"name\": \"default\", \"template\": \"L{{ eos_token }}\"}]}");
        assertEquals("L</s>", ChatTemplate.load(dir).orElseThrow().render(List.of(), true));
    }

    @Test
    void chatTemplateJinjaWinsOverTheConfigsTemplate() throws Exception {
        config("{\"bos_token\": \"<s>\", \"chat_template\": \"config\"}");
        Files.writeString(dir.resolve(TokenizerConfig.CHAT_TEMPLATE_FILE),
                "{{ bos_token }}{% for m in messages %}{{ m['role'] }}:{{ m['content'] }}\n{% endfor %}");
        TokenizerConfig read = TokenizerConfig.read(dir);
        assertTrue(read.chatTemplateSource().endsWith(TokenizerConfig.CHAT_TEMPLATE_FILE), read.chatTemplateSource());
        assertEquals("<s>user:hi\n", ChatTemplate.load(dir).orElseThrow().render(List.of(new ChatMessage("user", "hi")), true));
        Files.delete(dir.resolve(TokenizerConfig.FILE_NAME));
        assertEquals("user:hi\n", ChatTemplate.load(dir).orElseThrow().render(List.of(new ChatMessage("user", "hi")), true),
                "the file alone, without tokenizer_config.json (no BOS text)");
    }

    @Test
    void noTemplateAnywhereIsNone() throws Exception {
        config("{\"bos_token\": \"<s>\"}");
        assertFalse(ChatTemplate.load(dir).isPresent());
        assertEquals("", TokenizerConfig.read(dir).chatTemplateSource());
    }
}
