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
        long h = c.hiddenSize();
        long q = c.queryWidth();
        long kv = c.keyValueWidth();
        long inter = c.intermediateSize();
        out.put(EMBED, Shape.of(c.vocabSize(), h));
        boolean qkvBias = c.architecture().hasQkvBias() || c.attentionBias();
        boolean oBias = c.architecture() == Architecture.LLAMA && c.attentionBias();
        for (int i = 0; i < c.numHiddenLayers(); i++) {
            out.put(layer(i, "input_layernorm.weight"), Shape.of(h));
            out.put(layer(i, "self_attn.q_proj.weight"), Shape.of(q, h));
            out.put(layer(i, "self_attn.k_proj.weight"), Shape.of(kv, h));
            out.put(layer(i, "self_attn.v_proj.weight"), Shape.of(kv, h));
            if (qkvBias) {
                out.put(layer(i, "self_attn.q_proj.bias"), Shape.of(q));
                out.put(layer(i, "self_attn.k_proj.bias"), Shape.of(kv));
                out.put(layer(i, "self_attn.v_proj.bias"), Shape.of(kv));
            }
            out.put(layer(i, "self_attn.o_proj.weight"), Shape.of(h, q));
            if (oBias) {
                out.put(layer(i, "self_attn.o_proj.bias"), Shape.of(h));
            }
            out.put(layer(i, "post_attention_layernorm.weight"), Shape.of(h));
            out.put(layer(i, "mlp.gate_proj.weight"), Shape.of(inter, h));
            out.put(layer(i, "mlp.up_proj.weight"), Shape.of(inter, h));
            out.put(layer(i, "mlp.down_proj.weight"), Shape.of(h, inter));
        }
        out.put(FINAL_NORM, Shape.of(h));
        if (!c.tieWordEmbeddings()) {
            out.put(LM_HEAD, Shape.of(c.vocabSize(), h));
        }
        return out;
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
