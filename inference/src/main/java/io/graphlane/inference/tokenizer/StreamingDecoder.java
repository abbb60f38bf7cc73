package io.graphlane.inference.tokenizer;

import java.util.Arrays;
import java.util.function.Function;

/**
 * Turns one request's tokens into text as they arrive, emitting only complete characters: a
 * byte-level token that ends inside a multi-byte UTF-8 sequence produces no text until the
 * sequence completes (the text so far would end in U+FFFD). The text of all emitted pieces plus
 * {@link #flush()} equals decoding every token at once. Not thread-safe: one per stream.
 */
public final class StreamingDecoder {
    private static final char REPLACEMENT = '\uFFFD';

    private final Function<int[], String> decode;
    /** Cleans the emitted text up (Hugging Face's {@code clean_up_tokenization_spaces}), or null. */
    private final CleanUpSpaces.Stream cleanUp;
    private int[] ids = new int[16];
    private int count;
    private int prefixStart;
    private int readStart;

    /** A decoder that turns whole id sequences into text with {@code decode}. */
    public StreamingDecoder(Function<int[], String> decode) {
        this(decode, false);
    }

    /**
     * A decoder that turns whole id sequences into text with {@code decode} and, with {@code cleanUpSpaces}, cleans
     * the text up as {@link CleanUpSpaces#clean} (holding back the last few characters until they cannot change).
     */
    public StreamingDecoder(Function<int[], String> decode, boolean cleanUpSpaces) {
        this.decode = decode;
        this.cleanUp = cleanUpSpaces ? new CleanUpSpaces.Stream() : null;
    }

    /** Adds {@code token}; returns the text it completes, possibly empty, never a partial character. */
    public String next(int token) {
        String piece = nextRaw(token);
        return cleanUp == null ? piece : cleanUp.next(piece);
    }

    private String nextRaw(int token) {
        if (count == ids.length) {
            ids = Arrays.copyOf(ids, count * 2);
        }
        ids[count++] = token;
        String prefix = decode.apply(Arrays.copyOfRange(ids, prefixStart, readStart));
        String text = decode.apply(Arrays.copyOfRange(ids, prefixStart, count));
        if (text.length() > prefix.length() && text.charAt(text.length() - 1) != REPLACEMENT) {
            prefixStart = readStart;
            readStart = count;
            return text.substring(prefix.length());
        }
        return "";
    }

    /** The text still held back at the end of the stream (an unfinished character shows as U+FFFD). */
    public String flush() {
        String piece = flushRaw();
        return cleanUp == null ? piece : cleanUp.next(piece) + cleanUp.flush();
    }

    private String flushRaw() {
        String prefix = decode.apply(Arrays.copyOfRange(ids, prefixStart, readStart));
        String text = decode.apply(Arrays.copyOfRange(ids, prefixStart, count));
        prefixStart = count;
        readStart = count;
        return text.startsWith(prefix) ? text.substring(prefix.length()) : text;
    }
}
