package io.graphlane.inference.tokenizer;

import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import ai.djl.huggingface.tokenizers.jni.TokenizersLibrary;
import io.graphlane.core.GraphlaneException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Objects;

/**
 * A Hugging Face {@code tokenizer.json} loaded offline through DJL's tokenizers binding:
 * text to token ids and back. Thread-safe for encoding and decoding; close it to free the
 * native tokenizer.
 *
 * <p>Encoding takes only the ids from the native tokenizer. DJL's own {@code encode} also builds Java objects for
 * every token (its text, its character span, six arrays) from inside the native call, over a hundred bytes of heap
 * per token; when one of those allocations fails (a text of a few million tokens against a heap of a gigabyte or
 * two) the native code cannot hand the {@code OutOfMemoryError} back and the JVM aborts ("failed to initiate
 * panic"). Fetching the ids alone makes one {@code long[]} per call, 8 bytes per token. Encoding still costs about
 * 250 bytes of native memory and 2 to 3 microseconds per byte of text (a byte-level vocabulary without merges),
 * released when the call returns: a caller bounds the text it hands in.
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
    private final boolean addSpecialTokens;
    private final int maxTokenBytes;
    /** The id {@link #encode} puts first in place of the post-processor's additions, or -1 (see {@link #forModel}). */
    private final int bosId;
    /** The id {@link #encode} puts last in place of the post-processor's additions, or -1. */
    private final int eosId;
    /** Whether {@link #encode} adds {@link #bosId} and {@link #eosId} itself instead of tokenizer.json's post-processor. */
    private final boolean explicitSpecialTokens;
    /** Whether decoded text is cleaned up ({@code clean_up_tokenization_spaces}). */
    private final boolean cleanUpSpaces;

    private TextTokenizer(HuggingFaceTokenizer tokenizer, Path file, boolean addSpecialTokens, int maxTokenBytes) {
        this(tokenizer, file, addSpecialTokens, maxTokenBytes, false, -1, -1, false);
    }

    private TextTokenizer(HuggingFaceTokenizer tokenizer, Path file, boolean addSpecialTokens, int maxTokenBytes,
                          boolean explicitSpecialTokens, int bosId, int eosId, boolean cleanUpSpaces) {
        this.tokenizer = tokenizer;
        this.file = file;
        this.addSpecialTokens = addSpecialTokens;
        this.maxTokenBytes = maxTokenBytes;
        this.explicitSpecialTokens = explicitSpecialTokens;
        this.bosId = bosId;
        this.eosId = eosId;
        this.cleanUpSpaces = cleanUpSpaces;
    }

    /**
     * The tokenizer of model directory {@code dir} with the settings of its tokenizer_config.json applied as
     * transformers applies them (see {@link TokenizerConfig}): when the config names {@code add_bos_token} or
     * {@code add_eos_token}, {@link #encode} adds exactly the BOS and EOS ids those flags ask for instead of what
     * tokenizer.json's post-processor adds; otherwise the post-processor's additions stand. Decoding cleans up
     * spaces when {@code clean_up_tokenization_spaces} is true.
     *
     * @throws GraphlaneException naming the file and field when a flag asks for a BOS or EOS token whose text is not
     *                            one token of the vocabulary
     */
    public static TextTokenizer forModel(Path dir) {
        return forModel(dir, TokenizerConfig.read(dir));
    }

    /** As {@link #forModel(Path)}, with {@code config} read already. */
    public static TextTokenizer forModel(Path dir, TokenizerConfig config) {
        TextTokenizer t = load(dir, !config.overridesPostProcessor());
        try {
            int bos = -1;
            int eos = -1;
            // as transformers: a flag set without its token adds nothing
            if (config.addBosToken().orElse(false) && !config.bosToken().isEmpty()) {
                bos = t.singleId(config, "bos_token", config.bosToken());
            }
            if (config.addEosToken().orElse(false) && !config.eosToken().isEmpty()) {
                eos = t.singleId(config, "eos_token", config.eosToken());
            }
            // the same native tokenizer, now owned by the configured instance
            return new TextTokenizer(t.tokenizer, t.file, t.addSpecialTokens, t.maxTokenBytes, config.overridesPostProcessor(), bos, eos,
                    config.cleanUpTokenizationSpaces());
        } catch (RuntimeException e) {
            t.close();
            throw e;
        }
    }

    private int singleId(TokenizerConfig config, String field, String text) {
        int[] ids = encodeAsWritten(text);
        if (ids.length != 1) {
            String flag = field.equals("bos_token") ? "add_bos_token" : "add_eos_token";
            throw new GraphlaneException(config.file() + ": field '" + field + "' is \"" + text + "\", which " + flag
                    + " asks to add, but it is not one token of " + file + " (it encodes to " + ids.length + " tokens)");
        }
        return ids[0];
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
        int maxTokenBytes = VocabularyBytes.longestToken(file);
        try {
            // No prefix space, lower-casing or accent stripping is asked for: the native encoding that idsOf reads
            // is then exactly the one DJL's encode would wrap.
            HuggingFaceTokenizer tokenizer = HuggingFaceTokenizer.newInstance(file,
                    Map.of("addSpecialTokens", Boolean.toString(addSpecialTokens), "truncation", "false", "padding", "false"));
            return new TextTokenizer(tokenizer, file, addSpecialTokens, maxTokenBytes);
        } catch (IOException | RuntimeException e) {
            throw new GraphlaneException("tokenizer: cannot load " + file + ": " + e.getMessage(), e);
        }
    }

    /** The ids of {@code text}, with the special tokens this tokenizer was loaded to add. */
    public int[] encode(String text) {
        if (!explicitSpecialTokens || (bosId < 0 && eosId < 0)) {
            return idsOf(text, addSpecialTokens);
        }
        int[] body = idsOf(text, false);
        int first = bosId < 0 ? 0 : 1;
        int[] ids = new int[body.length + first + (eosId < 0 ? 0 : 1)];
        if (bosId >= 0) {
            ids[0] = bosId;
        }
        System.arraycopy(body, 0, ids, first, body.length);
        if (eosId >= 0) {
            ids[ids.length - 1] = eosId;
        }
        return ids;
    }

    /**
     * The ids of {@code text} exactly as written: the text of an added token (such as {@code </s>}) anywhere in it
     * becomes that token's id, leftmost and longest first, the rest goes through the model; nothing (such as a BOS
     * id) is added. A rendered chat prompt is tokenized this way, as Hugging Face's {@code apply_chat_template} does.
     */
    public int[] encodeAsWritten(String text) {
        return idsOf(text, false);
    }

    /** The ids of {@code text} from the native encoding, which is freed at once (see the class comment for why). */
    private int[] idsOf(String text, boolean withSpecialTokens) {
        Objects.requireNonNull(text, "text");
        long encoding = TokenizersLibrary.LIB.encode(tokenizer.getHandle(), text, withSpecialTokens);
        try {
            return toInts(TokenizersLibrary.LIB.getTokenIds(encoding));
        } finally {
            TokenizersLibrary.LIB.deleteEncoding(encoding);
        }
    }

    /**
     * The most UTF-8 bytes of text one token of this vocabulary stands for: its longest token or added token as
     * tokenizer.json stores it (see {@link VocabularyBytes}), or 0 when the file lists none. A text longer than
     * {@code n} times this encodes to more than {@code n} tokens.
     */
    public int maxTokenBytes() {
        return maxTokenBytes;
    }

    private static int[] toInts(long[] ids) {
        int[] result = new int[ids.length];
        for (int i = 0; i < ids.length; i++) {
            result[i] = Math.toIntExact(ids[i]);
        }
        return result;
    }

    /**
     * The text of {@code ids}; bytes that do not form complete UTF-8 characters become U+FFFD; cleaned up
     * ({@link CleanUpSpaces}) when the model's config asks for it.
     */
    public String decode(int[] ids) {
        return cleaned(rawDecode(ids));
    }

    /** The text of {@code ids} with special tokens (BOS, EOS, chat markers) left out; as {@link #decode} otherwise. */
    public String decodeSkippingSpecialTokens(int[] ids) {
        return cleaned(rawDecodeSkippingSpecialTokens(ids));
    }

    private String rawDecode(int[] ids) {
        return tokenizer.decode(toLongs(ids), false);
    }

    private String rawDecodeSkippingSpecialTokens(int[] ids) {
        return tokenizer.decode(toLongs(ids), true);
    }

    private String cleaned(String text) {
        return cleanUpSpaces ? CleanUpSpaces.clean(text) : text;
    }

    /** Whether decoded text is cleaned up ({@code clean_up_tokenization_spaces}). */
    public boolean cleansUpSpaces() {
        return cleanUpSpaces;
    }

    private static long[] toLongs(int[] ids) {
        long[] wide = new long[ids.length];
        for (int i = 0; i < ids.length; i++) {
            wide[i] = ids[i];
        }
        return wide;
    }

    /** A decoder for one stream of generated tokens that only emits complete characters; its pieces add up to {@link #decode}. */
    public StreamingDecoder streamingDecoder() {
        return new StreamingDecoder(this::rawDecode, cleanUpSpaces);
    }

    /** As {@link #streamingDecoder()}, for the text of {@link #decodeSkippingSpecialTokens}. */
    public StreamingDecoder contentStreamingDecoder() {
        return new StreamingDecoder(this::rawDecodeSkippingSpecialTokens, cleanUpSpaces);
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
