package io.graphlane.inference.tokenizer;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.List;

/**
 * A byte-level {@code tokenizer.json} whose token id is the byte's value: a BPE model with the 256
 * GPT-2 byte symbols and no merges, byte-level pre-tokenizer and decoder. Any text encodes (as its
 * UTF-8 bytes) and any id sequence decodes.
 */
public final class ByteLevelTokenizerJson {
    private ByteLevelTokenizerJson() {
    }

    /** The tokenizer.json text. */
    public static String render() {
        return render(256);
    }

    /**
     * The tokenizer.json text of a vocabulary of {@code vocabSize} ids: ids 0..255 are the bytes, and each id {@code i}
     * from 256 up is a token no text encodes to (there are no merges) that decodes to the text {@code <i>}, so every id
     * a model of that vocabulary emits decodes.
     *
     * @throws IllegalArgumentException if {@code vocabSize} is below 256
     */
    public static String render(int vocabSize) {
        if (vocabSize < 256) {
            throw new IllegalArgumentException("a byte-level vocabulary needs at least 256 ids, found " + vocabSize);
        }
        ObjectMapper mapper = new ObjectMapper();
        ObjectNode root = mapper.createObjectNode();
        root.put("version", "1.0");
        root.putNull("truncation");
        root.putNull("padding");
        root.putArray("added_tokens");
        root.putNull("normalizer");
        root.set("pre_tokenizer", byteLevel(mapper));
        root.putNull("post_processor");
        root.set("decoder", byteLevel(mapper));
        ObjectNode model = root.putObject("model");
        model.put("type", "BPE");
        model.putNull("dropout");
        model.putNull("unk_token");
        model.putNull("continuing_subword_prefix");
        model.putNull("end_of_word_suffix");
        model.put("fuse_unk", false);
        model.put("byte_fallback", false);
        ObjectNode vocab = model.putObject("vocab");
        List<String> symbols = byteSymbols();
        for (int b = 0; b < 256; b++) {
            vocab.put(symbols.get(b), b);
        }
        for (int id = 256; id < vocabSize; id++) {
            vocab.put("<" + id + ">", id);
        }
        ArrayNode merges = model.putArray("merges");
        assert merges.isEmpty();
        return root.toString();
    }

    private static ObjectNode byteLevel(ObjectMapper mapper) {
        ObjectNode node = mapper.createObjectNode();
        node.put("type", "ByteLevel");
        node.put("add_prefix_space", false);
        node.put("trim_offsets", true);
        node.put("use_regex", true);
        return node;
    }

    /** GPT-2's bytes_to_unicode: printable bytes map to themselves, the others to code points from 256 up. */
    static List<String> byteSymbols() {
        List<String> symbols = new ArrayList<>(256);
        int next = 0;
        for (int b = 0; b < 256; b++) {
            boolean printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
            symbols.add(printable ? String.valueOf((char) b) : String.valueOf((char) (256 + next++)));
        }
        return symbols;
    }
}
