package io.graphlane.checkpoint.gguf;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;

/**
 * A GGUF file's tokenizer metadata as a Hugging Face {@code tokenizer.json} and
 * {@code tokenizer_config.json}, pure functions.
 *
 * <ul>
 *   <li>{@code tokenizer.ggml.model = "llama"} (SentencePiece): a BPE model with byte fallback whose merges
 *       are derived from the piece scores as Hugging Face's SentencePiece converter derives them (every split
 *       of a piece into two pieces, ranked by the piece's score, higher first), {@code <0xXX>} byte pieces, the
 *       {@code ▁} space normalizer (with the prefix space unless {@code tokenizer.ggml.add_space_prefix} is
 *       false) and the matching decoder.
 *   <li>{@code tokenizer.ggml.model = "gpt2"} (byte-level BPE): the tokens and merges as they are, with the
 *       pre-tokenizer {@code tokenizer.ggml.pre} names ({@value #PRE_TOKENIZERS}).
 * </ul>
 * Control and unknown tokens become special added tokens, user-defined tokens non-special added
 * tokens; {@code add_bos_token}/{@code add_eos_token} become the post-processor's template; the chat
 * template passes through to {@code tokenizer_config.json}.
 */
public final class GgufTokenizer {
    /** The {@code tokenizer.ggml.pre} values read for gpt2-type tokenizers. */
    public static final String PRE_TOKENIZERS = "default, gpt2, llama-bpe, llama3, qwen2";

    /** llama.cpp's token types ({@code tokenizer.ggml.token_type}). */
    public static final int NORMAL = 1;
    /** See {@link #NORMAL}. */
    public static final int UNKNOWN = 2;
    /** See {@link #NORMAL}. */
    public static final int CONTROL = 3;
    /** See {@link #NORMAL}. */
    public static final int USER_DEFINED = 4;
    /** See {@link #NORMAL}. */
    public static final int UNUSED = 5;
    /** See {@link #NORMAL}. */
    public static final int BYTE = 6;

    private static final String LLAMA3_SPLIT = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}"
            + "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
    private static final String QWEN2_SPLIT = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}"
            + "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

    private static final JsonNodeFactory JSON = JsonNodeFactory.instance;
    private static final String SPACE = "\u2581";

    private GgufTokenizer() {
    }

    /** The vocabulary: tokens, their types and (llama) scores, validated against each other. */
    private record Vocab(String model, String[] tokens, int[] types, float[] scores) {
    }

    private static Vocab vocab(GgufMetadata meta) {
        String model = meta.requireString("tokenizer.ggml.model", "the tokenizer type");
        if (!model.equals("llama") && !model.equals("gpt2")) {
            throw new GgufFormatException(meta.file(), "metadata 'tokenizer.ggml.model' is \"" + model
                    + "\", expected llama (SentencePiece) or gpt2 (byte-level BPE)");
        }
        String[] tokens = meta.strings("tokenizer.ggml.tokens").orElseThrow(() ->
                meta.missing("tokenizer.ggml.tokens", "the vocabulary"));
        if (tokens.length == 0) {
            throw new GgufFormatException(meta.file(), "metadata 'tokenizer.ggml.tokens' is empty");
        }
        int[] types = new int[tokens.length];
        java.util.Arrays.fill(types, NORMAL);
        GgufValue t = meta.numbers("tokenizer.ggml.token_type").orElse(null);
        if (t != null) {
            checkLength(meta, "tokenizer.ggml.token_type", t.length(), tokens.length);
            for (int i = 0; i < tokens.length; i++) {
                long v = t.longAt(i);
                if (v < NORMAL || v > BYTE) {
                    throw new GgufFormatException(meta.file(), "metadata 'tokenizer.ggml.token_type'[" + i + "] is " + v
                            + ", expected 1 to 6 (normal, unknown, control, user-defined, unused, byte)");
                }
                types[i] = (int) v;
            }
        }
        float[] scores = null;
        if (model.equals("llama")) {
            GgufValue s = meta.numbers("tokenizer.ggml.scores").orElseThrow(() ->
                    meta.missing("tokenizer.ggml.scores", "the SentencePiece piece scores"));
            checkLength(meta, "tokenizer.ggml.scores", s.length(), tokens.length);
            scores = new float[tokens.length];
            for (int i = 0; i < tokens.length; i++) {
                scores[i] = (float) s.doubleAt(i);
            }
        }
        Map<String, Integer> seen = new HashMap<>();
        for (int i = 0; i < tokens.length; i++) {
            Integer before = seen.putIfAbsent(tokens[i], i);
            if (before != null) {
                throw new GgufFormatException(meta.file(), "metadata 'tokenizer.ggml.tokens' holds \"" + tokens[i]
                        + "\" twice (ids " + before + " and " + i + "); a tokenizer.json vocabulary maps each token once");
            }
        }
        return new Vocab(model, tokens, types, scores);
    }

    private static void checkLength(GgufMetadata meta, String key, int found, int expected) {
        if (found != expected) {
            throw new GgufFormatException(meta.file(), "metadata '" + key + "' has " + found
                    + " entries, expected " + expected + " (one per token of 'tokenizer.ggml.tokens')");
        }
    }

    private static OptionalLong tokenId(GgufMetadata meta, String key, int vocab) {
        return meta.integer(key, 0, vocab - 1L);
    }

    /** The ids that end generation: EOS, then EOT and EOM where present and different. */
    public static List<Long> endOfGenerationIds(GgufMetadata meta) {
        List<Long> ids = new ArrayList<>();
        for (String key : List.of("tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id")) {
            OptionalLong id = meta.integer(key, 0, Integer.MAX_VALUE);
            if (id.isPresent() && !ids.contains(id.getAsLong())) {
                ids.add(id.getAsLong());
            }
        }
        return ids;
    }

    /**
     * The Hugging Face {@code tokenizer.json} of the tokenizer in {@code meta}.
     *
     * @throws GgufFormatException naming the file and key of the first value missing or inconsistent
     */
    public static ObjectNode toTokenizerJson(GgufMetadata meta) {
        Vocab v = vocab(meta);
        int n = v.tokens().length;
        OptionalLong bos = tokenId(meta, "tokenizer.ggml.bos_token_id", n);
        OptionalLong eos = tokenId(meta, "tokenizer.ggml.eos_token_id", n);
        OptionalLong unk = tokenId(meta, "tokenizer.ggml.unknown_token_id", n);
        OptionalLong pad = tokenId(meta, "tokenizer.ggml.padding_token_id", n);
        for (String key : List.of("tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id")) {
            tokenId(meta, key, n);
        }
        boolean spm = v.model().equals("llama");
        boolean addBos = meta.bool("tokenizer.ggml.add_bos_token").orElse(spm);
        boolean addEos = meta.bool("tokenizer.ggml.add_eos_token").orElse(false);
        if (addBos && bos.isEmpty()) {
            throw meta.missing("tokenizer.ggml.bos_token_id", "add_bos_token is true");
        }
        if (addEos && eos.isEmpty()) {
            throw meta.missing("tokenizer.ggml.eos_token_id", "add_eos_token is true");
        }

        ObjectNode root = JSON.objectNode();
        root.put("version", "1.0");
        root.putNull("truncation");
        root.putNull("padding");
        ArrayNode added = root.putArray("added_tokens");
        for (int i = 0; i < n; i++) {
            int type = v.types()[i];
            boolean special = type == CONTROL || type == UNKNOWN || isId(bos, i) || isId(eos, i) || isId(unk, i)
                    || isId(pad, i);
            if (special || type == USER_DEFINED) {
                ObjectNode a = added.addObject();
                a.put("id", i);
                a.put("content", v.tokens()[i]);
                a.put("single_word", false);
                a.put("lstrip", false);
                a.put("rstrip", false);
                a.put("normalized", false);
                a.put("special", special);
            }
        }
        ObjectNode model = JSON.objectNode();
        model.put("type", "BPE");
        model.putNull("dropout");
        if (spm) {
            boolean prefix = meta.bool("tokenizer.ggml.add_space_prefix").orElse(true);
            ObjectNode norm = root.putObject("normalizer");
            norm.put("type", "Sequence");
            ArrayNode ns = norm.putArray("normalizers");
            if (prefix) {
                ns.addObject().put("type", "Prepend").put("prepend", SPACE);
            }
            ObjectNode replace = ns.addObject().put("type", "Replace");
            replace.putObject("pattern").put("String", " ");
            replace.put("content", SPACE);
            root.putNull("pre_tokenizer");
            model.put("unk_token", v.tokens()[(int) unk.orElse(0)]);
            model.putNull("continuing_subword_prefix");
            model.putNull("end_of_word_suffix");
            model.put("fuse_unk", true);
            model.put("byte_fallback", true);
            model.put("ignore_merges", false);
        } else {
            root.putNull("normalizer");
            root.set("pre_tokenizer", gpt2PreTokenizer(meta));
            model.putNull("unk_token");
            model.putNull("continuing_subword_prefix");
            model.putNull("end_of_word_suffix");
            model.put("fuse_unk", false);
            model.put("byte_fallback", false);
            String pre = meta.string("tokenizer.ggml.pre").orElse("default");
            model.put("ignore_merges", pre.equals("llama-bpe") || pre.equals("llama3"));
        }
        ObjectNode vocab = model.putObject("vocab");
        for (int i = 0; i < n; i++) {
            vocab.put(v.tokens()[i], i);
        }
        if (spm) {
            model.set("merges", spmMerges(v));
        } else {
            String[] merges = meta.strings("tokenizer.ggml.merges").orElseThrow(() ->
                    meta.missing("tokenizer.ggml.merges", "the byte-level BPE merges"));
            ArrayNode m = model.putArray("merges");
            Map<String, Integer> ids = new HashMap<>();
            for (int i = 0; i < n; i++) {
                ids.put(v.tokens()[i], i);
            }
            for (int i = 0; i < merges.length; i++) {
                String merge = merges[i];
                int space = merge.indexOf(' ');
                if (space <= 0 || space == merge.length() - 1 || merge.indexOf(' ', space + 1) >= 0) {
                    throw new GgufFormatException(meta.file(), "metadata 'tokenizer.ggml.merges'[" + i + "] is \"" + merge
                            + "\", expected two tokens separated by one space");
                }
                String left = merge.substring(0, space);
                String right = merge.substring(space + 1);
                if (!ids.containsKey(left) || !ids.containsKey(right) || !ids.containsKey(left + right)) {
                    throw new GgufFormatException(meta.file(), "metadata 'tokenizer.ggml.merges'[" + i + "] \"" + merge
                            + "\" names a token that is not in 'tokenizer.ggml.tokens'");
                }
                m.addArray().add(left).add(right);
            }
        }
        root.set("post_processor", postProcessor(v, bos, eos, addBos, addEos));
        root.set("decoder", spm ? spmDecoder(meta.bool("tokenizer.ggml.add_space_prefix").orElse(true)) : byteLevel(true, true));
        root.set("model", model);
        return root;
    }

    private static boolean isId(OptionalLong id, int i) {
        return id.isPresent() && id.getAsLong() == i;
    }

    private static ObjectNode byteLevel(boolean addPrefixSpace, boolean useRegex) {
        ObjectNode b = JSON.objectNode();
        b.put("type", "ByteLevel");
        b.put("add_prefix_space", addPrefixSpace);
        b.put("trim_offsets", true);
        b.put("use_regex", useRegex);
        return b;
    }

    private static ObjectNode gpt2PreTokenizer(GgufMetadata meta) {
        String pre = meta.string("tokenizer.ggml.pre").orElse("default");
        String regex = switch (pre) {
            case "default", "gpt2" -> null;
            case "llama-bpe", "llama3" -> LLAMA3_SPLIT;
            case "qwen2" -> QWEN2_SPLIT;
            default -> throw new GgufFormatException(meta.file(), "metadata 'tokenizer.ggml.pre' is \"" + pre
                    + "\", expected one of " + PRE_TOKENIZERS);
        };
        if (regex == null) {
            return byteLevel(false, true);
        }
        ObjectNode seq = JSON.objectNode();
        seq.put("type", "Sequence");
        ArrayNode list = seq.putArray("pretokenizers");
        ObjectNode split = list.addObject();
        split.put("type", "Split");
        split.putObject("pattern").put("Regex", regex);
        split.put("behavior", "Isolated");
        split.put("invert", false);
        list.add(byteLevel(false, false));
        return seq;
    }

    private static ObjectNode spmDecoder(boolean prefix) {
        ObjectNode d = JSON.objectNode();
        d.put("type", "Sequence");
        ArrayNode list = d.putArray("decoders");
        ObjectNode replace = list.addObject().put("type", "Replace");
        replace.putObject("pattern").put("String", SPACE);
        replace.put("content", " ");
        list.addObject().put("type", "ByteFallback");
        list.addObject().put("type", "Fuse");
        if (prefix) {
            list.addObject().put("type", "Strip").put("content", " ").put("start", 1).put("stop", 0);
        }
        return d;
    }

    private static ObjectNode postProcessor(Vocab v, OptionalLong bos, OptionalLong eos, boolean addBos, boolean addEos) {
        ObjectNode p = JSON.objectNode();
        p.put("type", "TemplateProcessing");
        ArrayNode single = p.putArray("single");
        ArrayNode pair = p.putArray("pair");
        ObjectNode specials = JSON.objectNode();
        String bosToken = addBos ? v.tokens()[(int) bos.getAsLong()] : null;
        String eosToken = addEos ? v.tokens()[(int) eos.getAsLong()] : null;
        for (int seq = 0; seq < 2; seq++) {
            ArrayNode target = seq == 0 ? single : pair;
            for (int part = 0; part <= seq; part++) {
                if (bosToken != null) {
                    target.addObject().putObject("SpecialToken").put("id", bosToken).put("type_id", part);
                }
                target.addObject().putObject("Sequence").put("id", part == 0 ? "A" : "B").put("type_id", part);
                if (eosToken != null) {
                    target.addObject().putObject("SpecialToken").put("id", eosToken).put("type_id", part);
                }
            }
        }
        if (bosToken != null) {
            special(specials, bosToken, bos.getAsLong());
        }
        if (eosToken != null) {
            special(specials, eosToken, eos.getAsLong());
        }
        p.set("special_tokens", specials);
        return p;
    }

    private static void special(ObjectNode specials, String token, long id) {
        ObjectNode s = specials.putObject(token);
        s.put("id", token);
        s.putArray("ids").add(id);
        s.putArray("tokens").add(token);
    }

    /** One candidate merge: left + right = a piece of score {@code score} and id {@code merged}. */
    private record Merge(int left, int right, int merged, float score) {
    }

    /**
     * BPE merges from SentencePiece scores: each normal or user-defined piece that splits into two
     * pieces of the vocabulary gives one merge per split, ranked by the piece's score (higher first),
     * then by the piece's id, then by the ids of the left and right pieces.
     */
    private static ArrayNode spmMerges(Vocab v) {
        Map<String, Integer> ids = new HashMap<>();
        for (int i = 0; i < v.tokens().length; i++) {
            ids.put(v.tokens()[i], i);
        }
        List<Merge> merges = new ArrayList<>();
        for (int i = 0; i < v.tokens().length; i++) {
            int type = v.types()[i];
            if (type != NORMAL && type != USER_DEFINED) {
                continue;
            }
            String piece = v.tokens()[i];
            for (int at = piece.offsetByCodePoints(0, 1); at < piece.length(); at = piece.offsetByCodePoints(at, 1)) {
                Integer l = ids.get(piece.substring(0, at));
                Integer r = ids.get(piece.substring(at));
                if (l != null && r != null) {
                    merges.add(new Merge(l, r, i, v.scores()[i]));
                }
            }
        }
        merges.sort(Comparator.comparingDouble((Merge m) -> -m.score()).thenComparingInt(Merge::merged)
                .thenComparingInt(Merge::left).thenComparingInt(Merge::right));
        ArrayNode out = JSON.arrayNode();
        for (Merge m : merges) {
            out.addArray().add(v.tokens()[m.left()]).add(v.tokens()[m.right()]);
        }
        return out;
    }

    /**
     * The Hugging Face {@code tokenizer_config.json}: the special tokens by text, {@code add_bos_token},
     * {@code add_eos_token} and {@code chat_template} ({@code tokenizer.chat_template}) as they are.
     */
    public static ObjectNode toTokenizerConfig(GgufMetadata meta) {
        Vocab v = vocab(meta);
        int n = v.tokens().length;
        boolean spm = v.model().equals("llama");
        ObjectNode c = JSON.objectNode();
        c.put("tokenizer_class", spm ? "LlamaTokenizerFast" : "PreTrainedTokenizerFast");
        c.put("add_bos_token", meta.bool("tokenizer.ggml.add_bos_token").orElse(spm));
        c.put("add_eos_token", meta.bool("tokenizer.ggml.add_eos_token").orElse(false));
        tokenId(meta, "tokenizer.ggml.bos_token_id", n).ifPresent(id -> c.put("bos_token", v.tokens()[(int) id]));
        tokenId(meta, "tokenizer.ggml.eos_token_id", n).ifPresent(id -> c.put("eos_token", v.tokens()[(int) id]));
        tokenId(meta, "tokenizer.ggml.unknown_token_id", n).ifPresent(id -> c.put("unk_token", v.tokens()[(int) id]));
        tokenId(meta, "tokenizer.ggml.padding_token_id", n).ifPresent(id -> c.put("pad_token", v.tokens()[(int) id]));
        meta.string("tokenizer.chat_template").ifPresent(t -> c.put("chat_template", t));
        return c;
    }
}
