package io.graphlane.checkpoint.gguf;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.graphlane.checkpoint.CheckpointSource;
import io.graphlane.checkpoint.recipe.DerivedWeight;
import io.graphlane.checkpoint.recipe.Recipe;
import io.graphlane.core.tensor.DType;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

/**
 * A Hugging Face llama, qwen2, qwen3, gemma2 or phi3 directory (4.x config layout, default RoPE or Phi-3's LongRoPE,
 * byte-level BPE tokenizer) written as GGUF as llama.cpp's converter writes it: its tensor names, llama's q/k rows (and
 * biases) permuted, Gemma's norm weights as {@code 1 + w} (added in F32), phi3's fused qkv and gate_up matrices as they
 * are, LongRoPE's factors as {@code rope_factors_long/short.weight}, the hyper-parameters as {@code <arch>.*} keys, the
 * vocabulary and merges as a gpt2-type tokenizer; each matrix encoded as {@code type} where its rows are whole blocks,
 * every other tensor F32.
 */
public final class HfGguf {
    private HfGguf() {
    }

    private static float[] floats(JsonNode array) {
        float[] v = new float[array.size()];
        for (int i = 0; i < v.length; i++) {
            v[i] = (float) array.get(i).asDouble();
        }
        return v;
    }

    /** Writes {@code hfDir} as {@code type} to {@code file}. */
    public static Path write(Path hfDir, GgmlType type, Path file) {
        try {
            ObjectMapper json = new ObjectMapper();
            JsonNode c = json.readTree(hfDir.resolve("config.json").toFile());
            String arch = c.get("model_type").asText();
            String p = arch + ".";
            long heads = c.get("num_attention_heads").asLong();
            long kvHeads = c.path("num_key_value_heads").asLong(heads);
            long hidden = c.get("hidden_size").asLong();
            long headDim = c.path("head_dim").asLong(hidden / heads);
            GgufWriter w = new GgufWriter().put("general.architecture", arch).put("general.name", hfDir.getFileName().toString())
                    .putU32(p + "context_length", c.get("max_position_embeddings").asLong())
                    .putU32(p + "embedding_length", hidden)
                    .putU32(p + "block_count", c.get("num_hidden_layers").asLong())
                    .putU32(p + "feed_forward_length", c.get("intermediate_size").asLong())
                    .putU32(p + "attention.head_count", heads)
                    .putU32(p + "attention.head_count_kv", kvHeads)
                    .putF32(p + "attention.layer_norm_rms_epsilon", c.get("rms_norm_eps").asDouble())
                    .putF32(p + "rope.freq_base", c.path("rope_theta").asDouble(10000))
                    .putU32(p + "attention.key_length", headDim)
                    .putU32(p + "attention.value_length", headDim);
            if (arch.equals("gemma2")) {
                w.putF32(p + "attn_logit_softcapping", c.get("attn_logit_softcapping").asDouble())
                        .putF32(p + "final_logit_softcapping", c.get("final_logit_softcapping").asDouble())
                        .putU32(p + "attention.sliding_window", c.get("sliding_window").asLong());
            }
            if (arch.equals("phi3")) {
                long ropeDim = Math.round(headDim * c.path("partial_rotary_factor").asDouble(1.0));
                w.putU32(p + "rope.dimension_count", ropeDim);
                JsonNode scaling = c.path("rope_scaling");
                if (scaling.path("type").asText("").equals("longrope")) {
                    w.putU32(p + "rope.scaling.original_context_length", c.get("original_max_position_embeddings").asLong());
                    w.add(GgufConfig.ROPE_FACTORS_LONG, GgmlType.F32, new long[] {ropeDim / 2}, floats(scaling.get("long_factor")));
                    w.add(GgufConfig.ROPE_FACTORS_SHORT, GgmlType.F32, new long[] {ropeDim / 2}, floats(scaling.get("short_factor")));
                }
                if (c.hasNonNull("sliding_window")) {
                    w.putU32(p + "attention.sliding_window", c.get("sliding_window").asLong());
                }
            }
            JsonNode model = json.readTree(hfDir.resolve("tokenizer.json").toFile()).get("model");
            String[] tokens = new String[model.get("vocab").size()];
            for (Iterator<Map.Entry<String, JsonNode>> it = model.get("vocab").fields(); it.hasNext(); ) {
                Map.Entry<String, JsonNode> e = it.next();
                tokens[e.getValue().asInt()] = e.getKey();
            }
            List<String> merges = new ArrayList<>();
            for (JsonNode m : model.path("merges")) {
                merges.add(m.isArray() ? m.get(0).asText() + " " + m.get(1).asText() : m.asText());
            }
            int[] types = new int[tokens.length];
            java.util.Arrays.fill(types, GgufTokenizer.NORMAL);
            w.put("tokenizer.ggml.model", "gpt2").put("tokenizer.ggml.pre", "default").putStrings("tokenizer.ggml.tokens", tokens)
                    .putInts("tokenizer.ggml.token_type", types).putStrings("tokenizer.ggml.merges", merges.toArray(String[]::new));
            try (CheckpointSource source = CheckpointSource.open(hfDir)) {
                for (String name : source.catalog().tensors().keySet()) {
                    Recipe r = source.recipe(name);
                    DerivedWeight f32 = DerivedWeight.of(name, r.spec().dtype() == DType.F32 ? r : r.cast(DType.F32));
                    ByteBuffer b = f32.evaluateToBuffer().order(ByteOrder.LITTLE_ENDIAN);
                    float[] values = new float[b.remaining() / Float.BYTES];
                    b.asFloatBuffer().get(values);
                    long[] dims = f32.output().shape().dims();
                    String g = GgufTensorNames.fromHf(arch, name).orElseThrow(() -> new IllegalStateException(arch + ": " + name));
                    long cols = dims.length > 1 ? dims[1] : 1;
                    if (arch.equals("llama") && g.contains(".attn_q.")) {
                        values = TinyLlamaGguf.permute(values, dims[0], cols, heads);
                    } else if (arch.equals("llama") && g.contains(".attn_k.")) {
                        values = TinyLlamaGguf.permute(values, dims[0], cols, kvHeads);
                    }
                    if (GgufTensorNames.toHf(arch, g).orElseThrow().transform() == GgufTensorNames.Transform.MINUS_ONE) {
                        for (int i = 0; i < values.length; i++) {
                            values[i] = values[i] + 1f;
                        }
                    }
                    boolean whole = dims.length == 2 && dims[1] % type.blockValues() == 0;
                    w.add(g, whole ? type : GgmlType.F32, dims, values);
                }
            }
            Files.createDirectories(file.getParent());
            return w.write(file);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
