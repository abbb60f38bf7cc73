package io.graphlane.inference.tokenizer;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.graphlane.checkpoint.json.StrictJson;
import io.graphlane.core.GraphlaneException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

/**
 * What a model directory's {@code tokenizer_config.json} (and {@code chat_template.jinja}) say about encoding,
 * decoding and chat, read as Hugging Face transformers applies them:
 * <ul>
 *   <li>{@code add_bos_token} / {@code add_eos_token}: transformers' fast tokenizer ({@code TokenizersBackend} in
 *       transformers 5, what {@code PreTrainedTokenizerFast} is there) keeps tokenizer.json's post-processor unless
 *       the config names either flag (or tokenizer.json has no post-processor); then it replaces the post-processor
 *       with one that adds {@code bos_token} before and {@code eos_token} after the text as the flags say (a flag
 *       left out counts as false; a flag set without its token counts as false). {@link TextTokenizer} does the same.
 *       Class-specific defaults of a {@code tokenizer_class} (such as an older {@code LlamaTokenizerFast}'s
 *       {@code add_bos_token=True} when the config leaves it out) are not applied: released Llama-family configs
 *       write the flags they use.</li>
 *   <li>{@code clean_up_tokenization_spaces}: whether decoding applies {@link CleanUpSpaces}; false when left out
 *       (transformers' default since 4.45).</li>
 *   <li>the chat template: {@code chat_template.jinja} when the directory has one (transformers' loader lets that
 *       file override the config's template), else the config's {@code chat_template}: a string, or a list of
 *       {@code {name, template}} of which the one named {@code default} is used.</li>
 *   <li>{@code bos_token} / {@code eos_token}: a string or an added-token object with its {@code content}.</li>
 * </ul>
 *
 * @param file                       the tokenizer_config.json (it may not exist)
 * @param addBosToken                the {@code add_bos_token} flag, empty when the config leaves it out
 * @param addEosToken                the {@code add_eos_token} flag, empty when the config leaves it out
 * @param cleanUpTokenizationSpaces  whether decoded text is cleaned up
 * @param bosToken                   the BOS token's text, "" when none
 * @param eosToken                   the EOS token's text, "" when none
 * @param chatTemplate               the chat template's text, if any
 * @param chatTemplateSource         where the template came from (the file, and the field for the config), "" when none
 */
public record TokenizerConfig(Path file, Optional<Boolean> addBosToken, Optional<Boolean> addEosToken, boolean cleanUpTokenizationSpaces,
                              String bosToken, String eosToken, Optional<String> chatTemplate, String chatTemplateSource) {
    /** The file this reads. */
    public static final String FILE_NAME = "tokenizer_config.json";
    /** The largest tokenizer_config.json read, in bytes (a vocabulary's added tokens and a chat template fit well within). */
    public static final long MAX_BYTES = 64L << 20;
    /** The chat template file that overrides the config's {@code chat_template}. */
    public static final String CHAT_TEMPLATE_FILE = "chat_template.jinja";

    /**
     * The settings of model directory {@code dir}; every field is at its default when it has no tokenizer_config.json.
     *
     * @throws GraphlaneException naming the file and field when a field has the wrong kind, or a file is unreadable
     */
    public static TokenizerConfig read(Path dir) {
        Path file = dir.resolve(FILE_NAME);
        JsonNode root = Files.isRegularFile(file) ? json(file) : new ObjectMapper().createObjectNode();
        Optional<Boolean> addBos = flag(file, root, "add_bos_token");
        Optional<Boolean> addEos = flag(file, root, "add_eos_token");
        boolean cleanUp = flag(file, root, "clean_up_tokenization_spaces").orElse(false);
        String bos = tokenText(file, root, "bos_token");
        String eos = tokenText(file, root, "eos_token");
        Path jinja = dir.resolve(CHAT_TEMPLATE_FILE);
        if (Files.isRegularFile(jinja)) {
            try {
                return new TokenizerConfig(file, addBos, addEos, cleanUp, bos, eos, Optional.of(Files.readString(jinja)), jinja.toString());
            } catch (IOException e) {
                throw new GraphlaneException(jinja + ": cannot read: " + e.getMessage(), e);
            }
        }
        JsonNode template = root.get("chat_template");
        Optional<String> text = template == null || template.isNull() ? Optional.empty() : Optional.of(templateText(file, template));
        return new TokenizerConfig(file, addBos, addEos, cleanUp, bos, eos, text, text.isPresent() ? file + " field 'chat_template'" : "");
    }

    /** True when the config names {@code add_bos_token} or {@code add_eos_token}: they then decide what encoding adds. */
    public boolean overridesPostProcessor() {
        return addBosToken.isPresent() || addEosToken.isPresent();
    }

    private static JsonNode json(Path file) {
        return StrictJson.readObject(file, MAX_BYTES);
    }

    private static Optional<Boolean> flag(Path file, JsonNode root, String field) {
        JsonNode v = root.get(field);
        if (v == null || v.isNull()) {
            return Optional.empty();
        }
        if (!v.isBoolean()) {
            throw new GraphlaneException(file + ": field '" + field + "' must be true or false, found " + v);
        }
        return Optional.of(v.booleanValue());
    }

    private static String templateText(Path file, JsonNode template) {
        if (template.isTextual()) {
            return template.asText();
        }
        if (template.isArray()) {
            for (JsonNode named : template) {
                if ("default".equals(named.path("name").asText(null)) && named.path("template").isTextual()) {
                    return named.get("template").asText();
                }
            }
            throw new GraphlaneException(file + ": field 'chat_template' is a list without a template named 'default'");
        }
        throw new GraphlaneException(file + ": field 'chat_template' is " + template.getNodeType().name().toLowerCase()
                + ", expected a string (or a list of {name, template})");
    }

    /** A special token's text: a string, or an object with its {@code content} (an AddedToken); "" when absent. */
    private static String tokenText(Path file, JsonNode root, String field) {
        JsonNode v = root.get(field);
        if (v == null || v.isNull()) {
            return "";
        }
        if (v.isTextual()) {
            return v.asText();
        }
        if (v.isObject() && v.path("content").isTextual()) {
            return v.get("content").asText();
        }
        throw new GraphlaneException(file + ": field '" + field + "' is " + v + ", expected a string or {\"content\": ...}");
    }
}
