package io.graphlane.inference.tokenizer;

import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import io.graphlane.core.GraphlaneException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

/**
 * A Hugging Face {@code tokenizer.json} loaded offline through DJL's tokenizers binding:
 * text to token ids and back. Thread-safe for encoding and decoding; close it to free the
 * native tokenizer.
 */
public final class TextTokenizer implements AutoCloseable {
    /**
     * DJL's setting of which build of its native tokenizer library to load. DJL picks a CUDA build on a host where it
     * sees a CUDA driver and downloads it, which fails on a host without network; tokenizing runs on the CPU in every
     * build, so graphlane asks for the CPU build that the tokenizers jar holds unless the setting is given (as a system
     * property or an environment variable).
     */
    static final String FLAVOR_SETTING = "RUST_FLAVOR";

    static {
        if (System.getProperty(FLAVOR_SETTING) == null && System.getenv(FLAVOR_SETTING) == null) {
            System.setProperty(FLAVOR_SETTING, "cpu");
        }
    }

    private final HuggingFaceTokenizer tokenizer;
    private final Path file;

    private TextTokenizer(HuggingFaceTokenizer tokenizer, Path file) {
        this.tokenizer = tokenizer;
        this.file = file;
    }

    /**
     * Loads {@code tokenizer.json} (a file, or a model directory holding one).
     *
     * @param addSpecialTokens whether {@link #encode} adds the tokenizer's special tokens (such as a BOS id) as
     *                         the Hugging Face default does
     * @throws GraphlaneException naming the file if it is missing or not a tokenizer the library accepts
     */
    public static TextTokenizer load(Path path, boolean addSpecialTokens) {
        Path file = Files.isDirectory(path) ? path.resolve("tokenizer.json") : path;
        if (!Files.isRegularFile(file)) {
            throw new GraphlaneException("tokenizer: " + file + " does not exist; a model directory needs its tokenizer.json");
        }
        try {
            HuggingFaceTokenizer tokenizer = HuggingFaceTokenizer.newInstance(file,
                    Map.of("addSpecialTokens", Boolean.toString(addSpecialTokens), "truncation", "false", "padding", "false"));
            return new TextTokenizer(tokenizer, file);
        } catch (IOException | RuntimeException e) {
            throw new GraphlaneException("tokenizer: cannot load " + file + ": " + e.getMessage(), e);
        }
    }

    /** The ids of {@code text}, with the special tokens this tokenizer was loaded to add. */
    public int[] encode(String text) {
        return toInts(tokenizer.encode(text).getIds());
    }

    /**
     * The ids of {@code text} exactly as written: the text of an added token (such as {@code </s>}) anywhere in it
     * becomes that token's id, leftmost and longest first, the rest goes through the model; nothing (such as a BOS
     * id) is added. A rendered chat prompt is tokenized this way, as Hugging Face's {@code apply_chat_template} does.
     */
    public int[] encodeAsWritten(String text) {
        return toInts(tokenizer.encode(text, false, false).getIds());
    }

    private static int[] toInts(long[] ids) {
        int[] result = new int[ids.length];
        for (int i = 0; i < ids.length; i++) {
            result[i] = Math.toIntExact(ids[i]);
        }
        return result;
    }

    /** The text of {@code ids}; bytes that do not form complete UTF-8 characters become U+FFFD. */
    public String decode(int[] ids) {
        return tokenizer.decode(toLongs(ids), false);
    }

    /** The text of {@code ids} with special tokens (BOS, EOS, chat markers) left out; as {@link #decode} otherwise. */
    public String decodeSkippingSpecialTokens(int[] ids) {
        return tokenizer.decode(toLongs(ids), true);
    }

    private static long[] toLongs(int[] ids) {
        long[] wide = new long[ids.length];
        for (int i = 0; i < ids.length; i++) {
            wide[i] = ids[i];
        }
        return wide;
    }

    /** A decoder for one stream of generated tokens that only emits complete characters. */
    public StreamingDecoder streamingDecoder() {
        return new StreamingDecoder(this::decode);
    }

    /** The tokenizer.json this was loaded from. */
    public Path file() {
        return file;
    }

    /** Frees the native tokenizer. */
    @Override
    public void close() {
        tokenizer.close();
    }
}
