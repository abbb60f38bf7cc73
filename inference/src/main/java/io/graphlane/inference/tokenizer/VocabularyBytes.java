package io.graphlane.inference.tokenizer;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import io.graphlane.core.GraphlaneException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

/**
 * The longest token of a {@code tokenizer.json}, in UTF-8 bytes of its text as the file stores it: every entry of
 * {@code model.vocab} (a map of token to id for BPE, WordPiece and WordLevel models; a list of {@code [piece, score]}
 * for Unigram ones) and every {@code added_tokens[].content}. Read with a streaming parser, so the merges and the rest
 * of a large file are skipped rather than held.
 *
 * <p>The stored text is never shorter than the text the token stands for in the models large language models use: a
 * byte-level token stores each byte as one character of one or two UTF-8 bytes, a SentencePiece token stores a space
 * as the three-byte {@code ▁} and a fallback byte as {@code <0xAB>}. So a text of more than {@code n} times this many
 * bytes encodes to more than {@code n} tokens. (A tokenizer whose normalizer drops text, or which maps a whole
 * unknown word to one unknown token, can pack more text into a token; no large language model's tokenizer does.)
 */
final class VocabularyBytes {
    private VocabularyBytes() {
    }

    /**
     * The UTF-8 length of the longest token text in {@code file}, or 0 when it lists none.
     *
     * @throws GraphlaneException naming the file if it cannot be read as JSON
     */
    static int longestToken(Path file) {
        try (JsonParser parser = new JsonFactory().createParser(file.toFile())) {
            if (parser.nextToken() != JsonToken.START_OBJECT) {
                throw new GraphlaneException("tokenizer: cannot load " + file + ": it is not a JSON object");
            }
            int longest = 0;
            while (parser.nextToken() == JsonToken.FIELD_NAME) {
                String field = parser.currentName();
                parser.nextToken();
                switch (field) {
                    case "model" -> longest = Math.max(longest, modelVocabulary(parser));
                    case "added_tokens" -> longest = Math.max(longest, addedTokens(parser));
                    default -> parser.skipChildren();
                }
            }
            return longest;
        } catch (IOException e) {
            throw new GraphlaneException("tokenizer: cannot load " + file + ": " + e.getMessage(), e);
        }
    }

    /** The longest token of {@code model.vocab}; the parser stands on the model's value and is left at its end. */
    private static int modelVocabulary(JsonParser parser) throws IOException {
        if (parser.currentToken() != JsonToken.START_OBJECT) {
            parser.skipChildren();
            return 0;
        }
        int longest = 0;
        while (parser.nextToken() == JsonToken.FIELD_NAME) {
            String field = parser.currentName();
            JsonToken value = parser.nextToken();
            if (!field.equals("vocab")) {
                parser.skipChildren();
            } else if (value == JsonToken.START_OBJECT) {
                while (parser.nextToken() == JsonToken.FIELD_NAME) {
                    longest = Math.max(longest, utf8Length(parser.currentName()));
                    parser.nextToken();
                    parser.skipChildren();
                }
            } else if (value == JsonToken.START_ARRAY) {
                longest = Math.max(longest, unigramPieces(parser));
            } else {
                parser.skipChildren();
            }
        }
        return longest;
    }

    /** The longest piece of a Unigram vocabulary, a list of {@code [piece, score]}. */
    private static int unigramPieces(JsonParser parser) throws IOException {
        int longest = 0;
        while (parser.nextToken() != JsonToken.END_ARRAY) {
            if (parser.currentToken() == JsonToken.START_ARRAY) {
                if (parser.nextToken() == JsonToken.VALUE_STRING) {
                    longest = Math.max(longest, utf8Length(parser.getText()));
                }
                while (parser.currentToken() != JsonToken.END_ARRAY) {
                    parser.skipChildren();
                    parser.nextToken();
                }
            } else {
                parser.skipChildren();
            }
        }
        return longest;
    }

    /** The longest {@code content} of the {@code added_tokens} list. */
    private static int addedTokens(JsonParser parser) throws IOException {
        if (parser.currentToken() != JsonToken.START_ARRAY) {
            parser.skipChildren();
            return 0;
        }
        int longest = 0;
        while (parser.nextToken() == JsonToken.START_OBJECT) {
            while (parser.nextToken() == JsonToken.FIELD_NAME) {
                String field = parser.currentName();
                JsonToken value = parser.nextToken();
                if (field.equals("content") && value == JsonToken.VALUE_STRING) {
                    longest = Math.max(longest, utf8Length(parser.getText()));
                } else {
                    parser.skipChildren();
                }
            }
        }
        return longest;
    }

    private static int utf8Length(String text) {
        return text.getBytes(StandardCharsets.UTF_8).length;
    }
}
