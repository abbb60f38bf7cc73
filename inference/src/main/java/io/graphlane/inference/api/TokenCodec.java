package io.graphlane.inference.api;

import io.graphlane.inference.tokenizer.StreamingDecoder;
import java.util.ArrayList;
import java.util.List;

/** Turns text into a model's token ids and back. */
public interface TokenCodec {
    /**
     * What {@link #maxTokenBytes} is for a codec that does not know its vocabulary: a generous bound on the text one
     * token of a large language model's vocabulary stands for.
     */
    int DEFAULT_MAX_TOKEN_BYTES = 256;

    /**
     * The token ids of {@code text} as the model's tokenizer encodes a prompt (Hugging Face's
     * {@code add_special_tokens=True}: with the BOS or EOS ids its tokenizer.json and tokenizer_config.json add).
     */
    int[] encode(String text);

    /** The text of {@code ids}; bytes of an incomplete UTF-8 sequence at the end decode to U+FFFD. */
    String decode(List<Integer> ids);

    /** The end-of-sequence token id, or -1 if the model has none. */
    int eosTokenId();

    /**
     * The ids of {@code text} exactly as written: the text of a special token anywhere in it becomes that token's id
     * and nothing (such as a BOS id) is added; how a rendered chat prompt is tokenized. By default {@link #encode}.
     */
    default int[] encodeAsWritten(String text) {
        return encode(text);
    }

    /**
     * The text a user reads from {@code ids}: special tokens (such as the end of sequence) left out, as Hugging Face's
     * {@code decode(..., skip_special_tokens=True)}. By default {@link #decode} without {@link #eosTokenId}.
     */
    default String decodeContent(List<Integer> ids) {
        int eos = eosTokenId();
        return decode(eos < 0 ? ids : ids.stream().filter(id -> id != eos).toList());
    }

    /**
     * The most UTF-8 bytes of text one token stands for, so that a text of more than {@code n} times this many bytes
     * encodes to more than {@code n} tokens; what lets a server refuse a prompt that cannot fit the model before it
     * is tokenized. By default {@link #DEFAULT_MAX_TOKEN_BYTES}.
     */
    default int maxTokenBytes() {
        return DEFAULT_MAX_TOKEN_BYTES;
    }

    /** {@code tokenizer} as a codec whose end-of-sequence id is {@code eosTokenId} (-1 for none). */
    static TokenCodec of(io.graphlane.inference.tokenizer.TextTokenizer tokenizer, int eosTokenId) {
        return new TokenCodec() {
            @Override
            public int[] encode(String text) {
                return tokenizer.encode(text);
            }

            @Override
            public int[] encodeAsWritten(String text) {
                return tokenizer.encodeAsWritten(text);
            }

            @Override
            public String decode(List<Integer> ids) {
                return tokenizer.decode(ids.stream().mapToInt(Integer::intValue).toArray());
            }

            @Override
            public String decodeContent(List<Integer> ids) {
                return tokenizer.decodeSkippingSpecialTokens(ids.stream().mapToInt(Integer::intValue).toArray());
            }

            @Override
            public int eosTokenId() {
                return eosTokenId;
            }

            @Override
            public int maxTokenBytes() {
                return tokenizer.maxTokenBytes() > 0 ? tokenizer.maxTokenBytes() : DEFAULT_MAX_TOKEN_BYTES;
            }

            @Override
            public StreamingDecoder streamingDecoder() {
                return tokenizer.streamingDecoder();
            }

            @Override
            public StreamingDecoder contentStreamingDecoder() {
                return tokenizer.contentStreamingDecoder();
            }
        };
    }

    /** A decoder for one stream of generated tokens that emits only complete characters. */
    default StreamingDecoder streamingDecoder() {
        return new StreamingDecoder(ids -> decode(boxed(ids)));
    }

    /** As {@link #streamingDecoder()}, for the text of {@link #decodeContent}: its pieces add up to that text. */
    default StreamingDecoder contentStreamingDecoder() {
        return new StreamingDecoder(ids -> decodeContent(boxed(ids)));
    }

    private static List<Integer> boxed(int[] ids) {
        List<Integer> list = new ArrayList<>(ids.length);
        for (int id : ids) {
            list.add(id);
        }
        return list;
    }
}
