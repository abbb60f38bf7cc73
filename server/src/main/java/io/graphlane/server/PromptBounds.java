package io.graphlane.server;

import io.graphlane.inference.api.TextGenerator;

/**
 * The most UTF-8 bytes of text a prompt can have for one model, checked before the text is tokenized: a text
 * prompt, each chat message's content and a rendered chat prompt.
 *
 * <p>The limit is the model's maximum sequence length times the most bytes one token of its vocabulary stands for
 * ({@code TokenCodec.maxTokenBytes()}: the longest token tokenizer.json stores, in UTF-8). Every token of a text
 * covers at most that many of its bytes, so a text of more bytes encodes to more tokens than the model takes and
 * could never run: no prompt that fits is refused. (The stored text overstates a byte-level token up to twice, so the
 * limit is loose rather than tight.) It is also never more than the largest request body: a text prompt cannot be
 * longer, and a chat template that renders a conversation into more than that is refused rather than tokenized.
 * Tokenizing costs about 250 bytes of native memory and 2 to 3 microseconds per byte of text, so this bound, times the
 * preparation threads, is what tokenizing can hold at once.
 *
 * @param maxBytes          the limit in bytes
 * @param maxSequenceLength the model's maximum sequence length, in tokens
 * @param maxTokenBytes     the most bytes one token of the model's vocabulary stands for
 */
record PromptBounds(long maxBytes, int maxSequenceLength, int maxTokenBytes) {

    /** The bounds of {@code generator}'s model, never more than {@code maxBodyBytes}. */
    static PromptBounds of(TextGenerator generator, long maxBodyBytes) {
        int tokenBytes = Math.max(1, generator.tokenizer().maxTokenBytes());
        long max = Math.min((long) generator.maxSequenceLength() * tokenBytes, maxBodyBytes);
        return new PromptBounds(Math.max(1, max), generator.maxSequenceLength(), tokenBytes);
    }

    /**
     * Refuses {@code text} ({@code what}, such as {@code prompt[2]}, under the request field {@code param}) when it has
     * more UTF-8 bytes than the model can take, naming the limit and how it follows from the model.
     */
    void check(String text, String param, String what) {
        long bytes = utf8Length(text);
        if (bytes > maxBytes) {
            throw ApiError.invalid(param, what + " is " + bytes + " bytes of UTF-8 text; this model takes at most " + maxBytes + " bytes of prompt text (" + derivation()
                    + "); send a shorter text");
        }
    }

    private String derivation() {
        long byTokens = (long) maxSequenceLength * maxTokenBytes;
        String tokens = "its maximum sequence length of " + maxSequenceLength + " tokens, each standing for at most " + maxTokenBytes
                + " bytes";
        return byTokens > maxBytes ? tokens + ", and at most the largest request body" : tokens;
    }

    /**
     * The bytes {@code text} takes in UTF-8 (an unpaired surrogate counted as the 3 bytes the tokenizer receives for
     * it), counted without encoding it.
     */
    static long utf8Length(CharSequence text) {
        long bytes = 0;
        int n = text.length();
        for (int i = 0; i < n; i++) {
            char c = text.charAt(i);
            if (c < 0x80) {
                bytes += 1;
            } else if (c < 0x800) {
                bytes += 2;
            } else if (Character.isHighSurrogate(c) && i + 1 < n && Character.isLowSurrogate(text.charAt(i + 1))) {
                bytes += 4;
                i++;
            } else {
                bytes += 3;
            }
        }
        return bytes;
    }
}
