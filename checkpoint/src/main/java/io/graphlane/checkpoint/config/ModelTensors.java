package io.graphlane.checkpoint.config;

import io.graphlane.checkpoint.CheckpointCatalog;
import io.graphlane.checkpoint.TensorLocation;
import io.graphlane.core.tensor.Shape;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The tensors a Llama-family architecture needs, with their shapes, and the check that a
 * checkpoint holds each of them with that shape, in a floating-point dtype, and nothing that
 * contradicts the config (a layer beyond {@code num_hidden_layers}).
 */
public final class ModelTensors {
    /** The embedding table, [vocab, hidden]. */
    public static final String EMBED = "model.embed_tokens.weight";
    /** The final norm, [hidden]. */
    public static final String FINAL_NORM = "model.norm.weight";
    /** The output head, [vocab, hidden]; absent when tied to the embedding. */
    public static final String LM_HEAD = "lm_head.weight";

    private static final Pattern LAYER = Pattern.compile("^model\\.layers\\.(\\d+)\\.");

    private ModelTensors() {
    }

    /** The name of tensor {@code suffix} (e.g. {@code self_attn.q_proj.weight}) of layer {@code layer}. */
    public static String layer(int layer, String suffix) {
        return "model.layers." + layer + "." + suffix;
    }

    /** Every tensor {@code config}'s architecture needs, with its shape, in model order. */
    public static Map<String, Shape> expected(ModelConfig c) {
        Map<String, Shape> out = new LinkedHashMap<>();
        out.put(EMBED, Shape.of(c.vocabSize(), c.hiddenSize()));
        for (int i = 0; i < c.numHiddenLayers(); i++) {
            out.putAll(layerTensors(c, i));
        }
        out.put(FINAL_NORM, Shape.of(c.hiddenSize()));
        if (!c.tieWordEmbeddings()) {
            out.put(LM_HEAD, Shape.of(c.vocabSize(), c.hiddenSize()));
        }
        return out;
    }

    /** True when {@code c}'s q, k and v projections carry biases (Qwen2 always, Llama and Qwen3 with {@code attention_bias}). */
    public static boolean qkvBias(ModelConfig c) {
        return c.architecture().hasQkvBias() || c.attentionBias();
    }

    /** True when {@code c}'s attention output projection carries a bias (Llama and Qwen3 with {@code attention_bias}). */
    public static boolean outputBias(ModelConfig c) {
        return c.attentionBias();
    }

    /** The tensors of layer {@code i} as the checkpoint stores them (Phi-3's fused projections as one tensor each). */
    public static Map<String, Shape> layerTensors(ModelConfig c, int i) {
        Map<String, Shape> out = new LinkedHashMap<>();
        long h = c.hiddenSize();
        long q = c.queryWidth();
        long kv = c.keyValueWidth();
        long inter = c.intermediateSize();
        out.put(layer(i, "input_layernorm.weight"), Shape.of(h));
        if (c.architecture().fusesProjections()) {
            out.put(layer(i, "self_attn.qkv_proj.weight"), Shape.of(q + 2 * kv, h));
        } else {
            out.put(layer(i, "self_attn.q_proj.weight"), Shape.of(q, h));
            out.put(layer(i, "self_attn.k_proj.weight"), Shape.of(kv, h));
            out.put(layer(i, "self_attn.v_proj.weight"), Shape.of(kv, h));
        }
        if (qkvBias(c)) {
            out.put(layer(i, "self_attn.q_proj.bias"), Shape.of(q));
            out.put(layer(i, "self_attn.k_proj.bias"), Shape.of(kv));
            out.put(layer(i, "self_attn.v_proj.bias"), Shape.of(kv));
        }
        if (c.architecture().hasQkNorm()) {
            out.put(layer(i, "self_attn.q_norm.weight"), Shape.of(c.headDim()));
            out.put(layer(i, "self_attn.k_norm.weight"), Shape.of(c.headDim()));
        }
        out.put(layer(i, "self_attn.o_proj.weight"), Shape.of(h, q));
        if (outputBias(c)) {
            out.put(layer(i, "self_attn.o_proj.bias"), Shape.of(h));
        }
        // Llama's pre-MLP norm; Gemma's norm of the attention output, which adds a norm before and after the MLP
        out.put(layer(i, "post_attention_layernorm.weight"), Shape.of(h));
        if (c.architecture().isGemma()) {
            out.put(layer(i, "pre_feedforward_layernorm.weight"), Shape.of(h));
            out.put(layer(i, "post_feedforward_layernorm.weight"), Shape.of(h));
        }
        if (c.moe().isPresent() && c.moe().get().isSparse(i)) {
            MoeConfig moe = c.moe().get();
            long width = moe.expertIntermediateSize();
            out.put(moe.routerName(i), Shape.of(moe.expertCount(), h));
            for (int e = 0; e < moe.expertCount(); e++) {
                out.put(moe.gateName(i, e), Shape.of(width, h));
                out.put(moe.upName(i, e), Shape.of(width, h));
                out.put(moe.downName(i, e), Shape.of(h, width));
            }
            return out;
        }
        if (c.architecture().fusesProjections()) {
            out.put(layer(i, "mlp.gate_up_proj.weight"), Shape.of(2 * inter, h));
        } else {
            out.put(layer(i, "mlp.gate_proj.weight"), Shape.of(inter, h));
            out.put(layer(i, "mlp.up_proj.weight"), Shape.of(inter, h));
        }
        out.put(layer(i, "mlp.down_proj.weight"), Shape.of(h, inter));
        if (c.mlpBias()) {
            out.put(layer(i, "mlp.gate_proj.bias"), Shape.of(inter));
            out.put(layer(i, "mlp.up_proj.bias"), Shape.of(inter));
            out.put(layer(i, "mlp.down_proj.bias"), Shape.of(h));
        }
        return out;
    }

    /**
     * True for a tensor that a checkpoint may hold and a load ignores, as transformers ignores it: the cached rotary
     * frequencies some older conversions saved ({@code model.layers.N.self_attn.rotary_emb.inv_freq}); both recompute
     * them from config.json.
     */
    public static boolean ignorable(String name) {
        return name.endsWith(".self_attn.rotary_emb.inv_freq") && LAYER.matcher(name).find();
    }

    /**
     * Checks {@code catalog} against {@code config}: every expected tensor present with its shape
     * and a floating-point dtype, a tied head (if present) shaped like the embedding, and no layer
     * tensor beyond the configured layer count.
     *
     * @throws ModelConfigException naming the directory, the tensor, and the expected and found shape
     */
    public static void check(Path dir, ModelConfig config, CheckpointCatalog catalog) {
        checkLayerCount(dir, config, catalog);
        Map<String, Shape> expected = expected(config);
        List<String> missing = new ArrayList<>();
        for (Map.Entry<String, Shape> e : expected.entrySet()) {
            TensorLocation found = catalog.tensors().get(e.getKey());
            if (found == null) {
                missing.add(e.getKey());
                continue;
            }
            checkTensor(dir, config, found, e.getValue());
        }
        if (!missing.isEmpty()) {
            String shown = String.join(", ", missing.subList(0, Math.min(5, missing.size())))
                    + (missing.size() > 5 ? " and " + (missing.size() - 5) + " more" : "");
            throw new ModelConfigException(dir + ": checkpoint is missing " + missing.size() + " tensor"
                    + (missing.size() == 1 ? "" : "s") + " that " + config.architecture().hfName() + " needs: " + shown
                    + " (expected shape " + expected.get(missing.get(0)) + " for " + missing.get(0) + ")");
        }
        TensorLocation head = catalog.tensors().get(LM_HEAD);
        if (head != null && config.tieWordEmbeddings()) {
            // transformers ties the head to the embedding and drops a stored head; so does graphlane
            checkTensor(dir, config, head, Shape.of(config.vocabSize(), config.hiddenSize()));
        }
        for (TensorLocation t : catalog.tensors().values()) {
            Matcher m = LAYER.matcher(t.name());
            if (m.find()) {
                boolean beyond;
                try {
                    beyond = Long.parseLong(m.group(1)) >= config.numHiddenLayers();
                } catch (NumberFormatException e) {
                    beyond = true;
                }
                if (beyond) {
                    throw new ModelConfigException(dir + ": tensor '" + t.name() + "' in " + t.shardName()
                            + " belongs to layer " + m.group(1) + ", but config.json has num_hidden_layers "
                            + config.numHiddenLayers());
                }
            }
        }
        for (TensorLocation t : catalog.tensors().values()) {
            boolean tiedHead = t.name().equals(LM_HEAD) && config.tieWordEmbeddings();
            if (!expected.containsKey(t.name()) && !tiedHead && !ignorable(t.name())) {
                throw new ModelConfigException(dir + ": tensor '" + t.name() + "' in " + t.shardName() + " is not used by "
                        + config.architecture().hfName() + " with this config.json (" + features(config)
                        + "); a checkpoint holding weights graphlane would ignore is refused rather than run wrong");
            }
        }
    }

    /** The config's tensor-shaping options, for messages. */
    private static String features(ModelConfig c) {
        return "attention_bias " + c.attentionBias() + ", mlp_bias " + c.mlpBias() + ", tie_word_embeddings "
                + c.tieWordEmbeddings();
    }

    /**
     * Refuses a layer count the checkpoint cannot hold before anything is built per layer: the names of a million
     * layers' tensors alone would take gigabytes. Counts the layers the catalogue has tensors of (it is bounded by the
     * files' headers), so a config.json claiming more fails at once, naming the field and both counts.
     */
    private static void checkLayerCount(Path dir, ModelConfig config, CheckpointCatalog catalog) {
        java.util.Set<Integer> present = new java.util.HashSet<>();
        for (String name : catalog.tensors().keySet()) {
            Matcher m = LAYER.matcher(name);
            if (m.find() && m.group(1).length() <= 9) {
                int layer = Integer.parseInt(m.group(1));
                if (layer < config.numHiddenLayers()) {
                    present.add(layer);
                }
            }
        }
        if (present.size() < config.numHiddenLayers()) {
            int firstMissing = 0;
            while (present.contains(firstMissing)) {
                firstMissing++;
            }
            throw new ModelConfigException(dir + ": config.json's field 'num_hidden_layers' is " + config.numHiddenLayers()
                    + ", but the checkpoint holds tensors of " + present.size() + " layer" + (present.size() == 1 ? "" : "s")
                    + " (none of layer " + firstMissing + ", e.g. " + layer(firstMissing, "self_attn.q_proj.weight") + ")");
        }
    }

    private static void checkTensor(Path dir, ModelConfig config, TensorLocation found, Shape expected) {
        if (!found.spec().shape().equals(expected)) {
            throw new ModelConfigException(dir + ": tensor '" + found.name() + "' in " + found.shardName()
                    + " has shape " + found.spec().shape() + ", expected " + expected + " for "
                    + config.architecture().hfName() + " with config.json's sizes");
        }
        if (!found.spec().dtype().isFloatingPoint()) {
            throw new ModelConfigException(dir + ": tensor '" + found.name() + "' in " + found.shardName()
                    + " has dtype " + found.spec().dtype() + ", expected a floating-point dtype (F32, F16, BF16)");
        }
    }
}
