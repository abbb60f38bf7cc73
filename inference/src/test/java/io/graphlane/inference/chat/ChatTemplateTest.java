package io.graphlane.inference.chat;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.graphlane.core.GraphlaneException;
import io.graphlane.inference.api.TokenCodec;
import io.graphlane.inference.tokenizer.TextTokenizer;
import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The tiny-chat fixture's chat template rendered on Jinjava and the rendered prompts tokenized, against the strings,
 * ids and texts that jinja2 and Hugging Face's tokenizers produced (reference.json).
 */
class ChatTemplateTest {
    private static Path dir;
    private static JsonNode reference;
    private static ChatTemplate template;
    private static TextTokenizer tokenizer;

    @BeforeAll
    static void load() throws IOException, URISyntaxException {
        dir = Path.of(ChatTemplateTest.class.getResource("/tiny-chat/tokenizer_config.json").toURI()).getParent();
        reference = new ObjectMapper().readTree(dir.resolve("reference.json").toFile());
        template = ChatTemplate.load(dir).orElseThrow();
        tokenizer = TextTokenizer.load(dir, true);
    }

    @AfterAll
    static void close() {
        tokenizer.close();
    }

    private static List<JsonNode> cases(boolean withIds) {
        List<JsonNode> out = new ArrayList<>();
        reference.get("chat").forEach(c -> {
            if (c.has("ids") == withIds) {
                out.add(c);
            }
        });
        return out;
    }

    private static List<ChatMessage> messages(JsonNode c) {
        List<ChatMessage> out = new ArrayList<>();
        c.get("messages").forEach(m -> out.add(new ChatMessage(m.get("role").asText(), m.get("content").asText())));
        return out;
    }

    private static int[] ints(JsonNode array) {
        int[] out = new int[array.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = array.get(i).asInt();
        }
        return out;
    }

    @Test
    void theTemplateAndSpecialTokensComeFromTokenizerConfig() {
        assertEquals("<s>", template.bosToken());
        assertEquals("</s>", template.eosToken());
    }

    @Test
    void everyReferenceConversationRendersToTheExactString() {
        List<JsonNode> cases = cases(true);
        assertEquals(5, cases.size());
        for (JsonNode c : cases) {
            assertEquals(c.get("rendered").asText(), template.render(messages(c), true), c.get("name").asText());
        }
    }

    @Test
    void withoutTheGenerationPromptTheAssistantTurnIsNotOpened() {
        String rendered = template.render(List.of(new ChatMessage("user", "Hello!")), false);
        assertEquals("<s><|user|>\nHello!</s>\n", rendered);
    }

    @Test
    void templateSyntaxInsideMessageContentStaysText() {
        String content = "{{ 7 * 7 }} {% if true %}x{% endif %} {{ raise_exception('no') }} \\n";
        assertEquals("<s><|user|>\n" + content + "</s>\n<|assistant|>\n", template.render(List.of(new ChatMessage("user", content)), true));
    }

    @Test
    void anUnknownRoleRaisesTheTemplatesOwnMessage() {
        List<JsonNode> cases = cases(false);
        assertEquals(1, cases.size());
        JsonNode c = cases.get(0);
        ChatTemplateException e = assertThrows(ChatTemplateException.class, () -> template.render(messages(c), true));
        assertEquals(c.get("error").asText(), e.getMessage());
    }

    @Test
    void renderedPromptsTokenizeToTheReferenceIdsWithSpecialTokensMatchedAnywhere() {
        for (JsonNode c : cases(true)) {
            assertArrayEquals(ints(c.get("ids")), tokenizer.encodeAsWritten(c.get("rendered").asText()), c.get("name").asText());
        }
    }

    @Test
    void theCodecOfATokenizerEncodesAsWrittenAndDecodesContentWithoutSpecialTokens() {
        TokenCodec codec = TokenCodec.of(tokenizer, 257);
        for (JsonNode c : cases(true)) {
            String name = c.get("name").asText();
            assertArrayEquals(ints(c.get("ids")), codec.encodeAsWritten(c.get("rendered").asText()), name);
            List<Integer> greedy = new ArrayList<>();
            c.get("greedy").forEach(id -> greedy.add(id.asInt()));
            assertEquals(c.get("greedy_text").asText(), codec.decodeContent(greedy), name);
            StringBuilder streamed = new StringBuilder();
            var decoder = codec.contentStreamingDecoder();
            greedy.forEach(id -> streamed.append(decoder.next(id)));
            streamed.append(decoder.flush());
            assertEquals(c.get("greedy_text").asText(), streamed.toString(), name);
        }
        // The plain decode keeps the special tokens' text; the content leaves it out.
        assertEquals("a</s>", codec.decode(List.of(97, 257)));
        assertEquals("a", codec.decodeContent(List.of(97, 257)));
    }

    @Test
    void aTemplateErrorOtherThanRaiseNamesItsLine() {
        ChatTemplate broken = new ChatTemplate("{{ bos_token }}\n{% for m in messages %}{{ m['content'] }}", "<s>", "</s>");
        ChatTemplateException e = assertThrows(ChatTemplateException.class,
                () -> broken.render(List.of(new ChatMessage("user", "x")), true));
        assertTrue(e.getMessage().contains("line 2") && e.getMessage().contains("endfor"), e.getMessage());
    }

    @Test
    void aDirectoryWithoutAChatTemplateHasNone(@TempDir Path tmp) throws IOException {
        assertFalse(ChatTemplate.load(tmp).isPresent(), "no tokenizer_config.json");
        Files.writeString(tmp.resolve(ChatTemplate.FILE_NAME), "{\"bos_token\": \"<s>\", \"add_bos_token\": true}");
        assertFalse(ChatTemplate.load(tmp).isPresent(), "no chat_template");
    }

    @Test
    void aListOfNamedTemplatesYieldsTheDefaultAndAddedTokenObjectsTheirContent(@TempDir Path tmp) throws IOException {
        Files.writeString(tmp.resolve(ChatTemplate.FILE_NAME), "{\"chat_template\": [{\"name\": \"tool_use\", \"template\": \"T\"},"
                + " {\"name\": \"default\", \"template\": \"{{ bos_token }}D{{ eos_token }}\"}],"
                + " \"bos_token\": {\"content\": \"<b>\", \"special\": true}, \"eos_token\": \"<e>\"}");
        assertEquals("<b>D<e>", ChatTemplate.load(tmp).orElseThrow().render(List.of(), true));
    }

    @Test
    void aChatTemplateOfTheWrongKindIsRefusedNamingFileAndField(@TempDir Path tmp) throws IOException {
        Files.writeString(tmp.resolve(ChatTemplate.FILE_NAME), "{\"chat_template\": 42}");
        GraphlaneException e = assertThrows(GraphlaneException.class, () -> ChatTemplate.load(tmp));
        assertTrue(e.getMessage().contains(ChatTemplate.FILE_NAME + ": field 'chat_template'"), e.getMessage());
    }
}
