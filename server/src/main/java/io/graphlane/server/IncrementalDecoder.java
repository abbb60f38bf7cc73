package io.graphlane.server;

import io.graphlane.inference.api.TokenCodec;
import java.util.ArrayList;
import java.util.List;

/**
 * Turns a stream of token ids into a stream of text pieces. A byte-level tokenizer may
 * split one character over several tokens: text ending in an incomplete UTF-8 sequence
 * (decoded as U+FFFD) is held back until the character is complete or the stream ends.
 */
final class IncrementalDecoder {
    private static final char REPLACEMENT = '\uFFFD';

    private final TokenCodec tokenizer;
    private final List<Integer> ids = new ArrayList<>();
    private int emitted;

    IncrementalDecoder(TokenCodec tokenizer) {
        this.tokenizer = tokenizer;
    }

    /** Adds one token and returns the text that is now complete (possibly empty). */
    String add(int tokenId) {
        ids.add(tokenId);
        String text = tokenizer.decode(ids);
        int end = text.length();
        while (end > emitted && text.charAt(end - 1) == REPLACEMENT) {
            end--;
        }
        if (end <= emitted) {
            return "";
        }
        String piece = text.substring(emitted, end);
        emitted = end;
        return piece;
    }

    /** Whatever is left at the end of the stream, incomplete characters included. */
    String flush() {
        String text = tokenizer.decode(ids);
        String rest = text.length() > emitted ? text.substring(emitted) : "";
        emitted = text.length();
        return rest;
    }
}
