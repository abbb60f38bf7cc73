package io.graphlane.inference.api;

import java.util.List;

/** Turns text into a model's token ids and back. */
public interface TokenCodec {
    /** The token ids of {@code text}, without special tokens added. */
    int[] encode(String text);

    /** The text of {@code ids}; bytes of an incomplete UTF-8 sequence at the end decode to U+FFFD. */
    String decode(List<Integer> ids);

    /** The end-of-sequence token id, or -1 if the model has none. */
    int eosTokenId();
}
