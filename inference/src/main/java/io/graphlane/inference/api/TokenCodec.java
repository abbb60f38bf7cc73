package io.graphlane.inference.api;

import io.graphlane.inference.tokenizer.StreamingDecoder;
import java.util.ArrayList;
import java.util.List;

/** Turns text into a model's token ids and back. */
public interface TokenCodec {
    /** The token ids of {@code text}, without special tokens added. */
    int[] encode(String text);

    /** The text of {@code ids}; bytes of an incomplete UTF-8 sequence at the end decode to U+FFFD. */
    String decode(List<Integer> ids);

    /** The end-of-sequence token id, or -1 if the model has none. */
    int eosTokenId();

    /** {@code tokenizer} as a codec whose end-of-sequence id is {@code eosTokenId} (-1 for none). */
    static TokenCodec of(io.graphlane.inference.tokenizer.TextTokenizer tokenizer, int eosTokenId) {
        return new TokenCodec() {
            @Override
            public int[] encode(String text) {
                return tokenizer.encode(text);
            }

            @Override
            public String decode(List<Integer> ids) {
                return tokenizer.decode(ids.stream().mapToInt(Integer::intValue).toArray());
            }

            @Override
            public int eosTokenId() {
                return eosTokenId;
            }
        };
    }

    /** A decoder for one stream of generated tokens that emits only complete characters. */
    default StreamingDecoder streamingDecoder() {
        return new StreamingDecoder(ids -> {
            List<Integer> list = new ArrayList<>(ids.length);
            for (int id : ids) {
                list.add(id);
            }
            return decode(list);
        });
    }
}
