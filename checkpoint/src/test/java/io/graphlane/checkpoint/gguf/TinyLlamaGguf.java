package io.graphlane.checkpoint.gguf;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.graphlane.checkpoint.CheckpointSource;
import io.graphlane.checkpoint.Fixtures;
import io.graphlane.core.param.EncodedLease;
import io.graphlane.core.tensor.Shape;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The tiny-llama fixture written as GGUF as llama.cpp's converter writes a Llama model: llama.cpp's
 * tensor names, the q/k rows permuted with the converter's {@code permute}, the hyper-parameters as
 * {@code llama.*} keys and the byte-level BPE vocabulary as a gpt2-type tokenizer. Each tensor is
 * encoded as the requested type where its row length is whole blocks of it, else kept F32 (as
 * llama.cpp keeps a tensor it cannot quantize).
 */
public final class TinyLlamaGguf {
    /** One fixture tensor: Hugging Face shape and F32 values. */
    public record Tensor(Shape shape, float[] values) {
    }

    private TinyLlamaGguf() {
    }

    /** The fixture's F32 tensors by Hugging Face name. */
    public static Map<String, Tensor> fixtureTensors() {
        Map<String, Tensor> out = new LinkedHashMap<>();
        try (CheckpointSource src = CheckpointSource.open(Fixtures.tinyLlama(""))) {
            for (String name : src.catalog().tensors().keySet()) {
                EncodedLease lease = src.lease(name);
                try {
                    ByteBuffer b = lease.bytes();
                    float[] v = new float[b.remaining() / 4];
                    for (int i = 0; i < v.length; i++) {
                        v[i] = b.getFloat(4 * i);
                    }
                    out.put(name, new Tensor(lease.spec().shape(), v));
                } finally {
                    lease.release();
                }
            }
        }
        return out;
    }

    static JsonNode config() {
        try {
            return new ObjectMapper().readTree(Fixtures.tinyLlama("").resolve("config.json").toFile());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** llama.cpp's {@code permute(w, heads)}: rows as [heads, 2, rows/heads/2] with axes 1 and 2 swapped. */
    static float[] permute(float[] w, long rows, long cols, long heads) {
        float[] out = new float[w.length];
        long half = rows / heads / 2;
        for (long h = 0; h < heads; h++) {
            for (long i = 0; i < half; i++) {
                for (long j = 0; j < 2; j++) {
                    long from = h * 2 * half + j * half + i; // source row [h, j, i]
                    long to = h * 2 * half + i * 2 + j;      // lands at [h, i, j]
                    System.arraycopy(w, (int) (from * cols), out, (int) (to * cols), (int) cols);
                }
            }
        }
        return out;
    }

    /** A writer holding the fixture's metadata and tokenizer, and its tensors encoded as {@code type} where possible. */
    public static GgufWriter writer(GgmlType type) {
        JsonNode c = config();
        GgufWriter w = new GgufWriter()
                .put("general.architecture", "llama")
                .put("general.name", "tiny-llama")
                .putU32("llama.context_length", c.get("max_position_embeddings").asLong())
                .putU32("llama.embedding_length", c.get("hidden_size").asLong())
                .putU32("llama.block_count", c.get("num_hidden_layers").asLong())
                .putU32("llama.feed_forward_length", c.get("intermediate_size").asLong())
                .putU32("llama.attention.head_count", c.get("num_attention_heads").asLong())
                .putU32("llama.attention.head_count_kv", c.get("num_key_value_heads").asLong())
                .putF32("llama.attention.layer_norm_rms_epsilon", c.get("rms_norm_eps").asDouble())
                .putF32("llama.rope.freq_base", c.get("rope_theta").asDouble())
                .putU32("llama.rope.dimension_count", c.get("hidden_size").asLong() / c.get("num_attention_heads").asLong())
                .putU32("llama.vocab_size", c.get("vocab_size").asLong());
        addTokenizer(w);
        long heads = c.get("num_attention_heads").asLong();
        long kvHeads = c.get("num_key_value_heads").asLong();
        for (Map.Entry<String, Tensor> e : fixtureTensors().entrySet()) {
            String name = GgufTensorNames.fromHf("llama", e.getKey()).orElseThrow();
            Tensor t = e.getValue();
            long[] dims = t.shape().dims();
            float[] values = t.values();
            if (name.contains(".attn_q.")) {
                values = permute(values, dims[0], dims.length > 1 ? dims[1] : 1, heads);
            } else if (name.contains(".attn_k.")) {
                values = permute(values, dims[0], dims.length > 1 ? dims[1] : 1, kvHeads);
            }
            long rowLength = dims[dims.length - 1];
            GgmlType as = rowLength % type.blockValues() == 0 ? type : GgmlType.F32;
            w.add(name, as, dims, values);
        }
        return w;
    }

    /** The fixture's byte-level vocabulary (256 tokens, no merges) as a gpt2-type GGUF tokenizer. */
    static void addTokenizer(GgufWriter w) {
        try {
            JsonNode vocab = new ObjectMapper().readTree(Fixtures.tinyLlama("").resolve("tokenizer.json").toFile())
                    .get("model").get("vocab");
            String[] tokens = new String[vocab.size()];
            for (Iterator<Map.Entry<String, JsonNode>> it = vocab.fields(); it.hasNext(); ) {
                Map.Entry<String, JsonNode> e = it.next();
                tokens[e.getValue().asInt()] = e.getKey();
            }
            int[] types = new int[tokens.length];
            java.util.Arrays.fill(types, GgufTokenizer.NORMAL);
            w.put("tokenizer.ggml.model", "gpt2")
                    .put("tokenizer.ggml.pre", "default")
                    .putStrings("tokenizer.ggml.tokens", tokens)
                    .putInts("tokenizer.ggml.token_type", types)
                    .putStrings("tokenizer.ggml.merges");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Writes the fixture as {@code type} to {@code file}. */
    public static Path write(GgmlType type, Path file) {
        try {
            Files.createDirectories(file.getParent());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return writer(type).write(file);
    }
}
