package io.graphlane.inference.weights;

import io.graphlane.core.GraphlaneException;
import io.graphlane.core.nn.NeuralOps;
import io.graphlane.inference.llama.ExpertWeights;
import io.graphlane.inference.llama.LayerWeights;
import io.graphlane.inference.llama.MoeWeights;
import io.graphlane.inference.llama.LlamaConfig;
import io.graphlane.inference.llama.LlamaTensors;
import io.graphlane.inference.llama.LlamaTensors.Expected;
import io.graphlane.inference.llama.StageWeights;
import io.graphlane.inference.stage.StageSpec;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Set;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** Builds a stage's {@link StageWeights} from a per-tensor source, checking every shape, all or nothing. */
public final class StageWeightsAssembly {

    /** Makes one backend tensor of the expected name and shape. */
    @FunctionalInterface
    public interface TensorSource<T> {
        /** The tensor {@code expected} names, as a {@code rows × cols} backend tensor owned by the caller. */
        T tensor(Expected expected);
    }

    private StageWeightsAssembly() {
    }

    /**
     * Asks {@code source} for every tensor {@code stage} reads and assembles them. If a tensor is
     * missing, misshapen or fails to load, the tensors already made are released (with
     * {@code ops.release}) and the error names the tensor.
     */
    public static <T> StageWeights<T> assemble(LlamaConfig config, StageSpec stage, NeuralOps<T> ops, TensorSource<T> source) {
        Map<String, T> made = new HashMap<>();
        try {
            for (Expected expected : LlamaTensors.forStage(config, stage)) {
                T tensor = source.tensor(expected);
                made.put(expected.name(), tensor);
                if (ops.rows(tensor) != expected.rows() || ops.cols(tensor) != expected.cols()) {
                    throw new GraphlaneException("tensor " + expected.name() + " should be " + expected.rows() + " x " + expected.cols()
                            + " but is " + ops.rows(tensor) + " x " + ops.cols(tensor));
                }
            }
        } catch (RuntimeException e) {
            for (T tensor : made.values()) {
                try {
                    ops.release(tensor);
                } catch (IllegalStateException notOwned) {
                    e.addSuppressed(notOwned);
                }
            }
            throw e;
        }
        return fromNamed(config, stage, made);
    }

    /**
     * Arranges tensors already made and checked, keyed by their Hugging Face names, into {@code stage}'s
     * {@link StageWeights}; takes no ownership and makes nothing.
     *
     * @throws IllegalArgumentException naming every tensor of {@link LlamaTensors#forStage} that {@code tensors} lacks
     */
    public static <T> StageWeights<T> fromNamed(LlamaConfig config, StageSpec stage, Map<String, T> tensors) {
        List<String> absent = new ArrayList<>();
        for (Expected expected : LlamaTensors.forStage(config, stage)) {
            if (tensors.get(expected.name()) == null) {
                absent.add(expected.name());
            }
        }
        if (!absent.isEmpty()) {
            throw new IllegalArgumentException(stage + ": no tensor for " + String.join(", ", absent));
        }
        List<LayerWeights<T>> layers = new ArrayList<>();
        for (int l = stage.layers().start(); l < stage.layers().end(); l++) {
            layers.add(layer(config, l, tensors));
        }
        T embedding = stage.isFirst() ? tensors.get(LlamaTensors.EMBEDDING) : null;
        T finalNorm = stage.isLast() ? tensors.get(LlamaTensors.FINAL_NORM) : null;
        T head = stage.isLast() ? tensors.get(config.tieWordEmbeddings() ? LlamaTensors.EMBEDDING : LlamaTensors.LM_HEAD) : null;
        return new StageWeights<>(stage, embedding, layers, finalNorm, head);
    }

    /** Every distinct tensor of {@code weights}, each once (a tied head shares the embedding's tensor). */
    private static <T> Set<T> distinctTensors(StageWeights<T> weights) {
        Set<T> distinct = Collections.newSetFromMap(new IdentityHashMap<>());
        distinct.add(weights.embedding());
        distinct.add(weights.finalNorm());
        distinct.add(weights.lmHead());
        for (LayerWeights<T> l : weights.layers()) {
            distinct.addAll(Arrays.asList(l.attentionNorm(), l.wq(), l.wk(), l.wv(), l.wo(), l.bq(), l.bk(), l.bv(), l.bo(),
                    l.ffnNorm(), l.wGate(), l.wUp(), l.wDown(), l.qNorm(), l.kNorm(), l.bGate(), l.bUp(), l.bDown(),
                    l.postAttentionNorm(), l.postFfnNorm()));
            if (l.moe() != null) {
                distinct.add(l.moe().router());
                for (ExpertWeights<T> e : l.moe().experts()) {
                    if (e != null) {
                        distinct.addAll(Arrays.asList(e.gate(), e.up(), e.down()));
                    }
                }
            }
        }
        distinct.remove(null);
        return distinct;
    }

    /**
     * Releases every tensor of {@code weights} once (a tied head shares the embedding's tensor), for
     * tensors the caller owns through {@code ops}; weights bound through the materialization
     * supervisor are released by their loader instead ({@link SupervisedWeightsLoader#release}).
     */
    public static <T> void release(StageWeights<T> weights, NeuralOps<T> ops) {
        for (T tensor : distinctTensors(weights)) {
            ops.release(tensor);
        }
    }

    /**
     * Layer {@code l}'s weights from tensors keyed by their Hugging Face names (a stage's, or a tensor-parallel
     * shard's parts of them); the biases {@code c} does not have are null. Takes no ownership.
     */
    public static <T> LayerWeights<T> layer(LlamaConfig c, int l, Map<String, T> made) {
        boolean bias = c.qkvBias();
        boolean gemma = c.normsBlockOutputs();
        boolean sparse = c.isSparse(l);
        MoeWeights<T> moe = null;
        if (sparse) {
            List<ExpertWeights<T>> experts = new ArrayList<>();
            for (int e = 0; e < c.moe().expertCount(); e++) {
                T gate = made.get(c.moe().gateName(l, e));
                T up = made.get(c.moe().upName(l, e));
                T down = made.get(c.moe().downName(l, e));
                // an expert-parallel lane holds only its share of the experts
                experts.add(gate == null && up == null && down == null ? null : new ExpertWeights<>(gate, up, down));
            }
            moe = new MoeWeights<>(l, made.get(c.moe().routerName(l)), experts);
        }
        return new LayerWeights<>(
                made.get(LlamaTensors.layer(l, "input_layernorm.weight")),
                made.get(LlamaTensors.layer(l, "self_attn.q_proj.weight")),
                made.get(LlamaTensors.layer(l, "self_attn.k_proj.weight")),
                made.get(LlamaTensors.layer(l, "self_attn.v_proj.weight")),
                made.get(LlamaTensors.layer(l, "self_attn.o_proj.weight")),
                bias ? made.get(LlamaTensors.layer(l, "self_attn.q_proj.bias")) : null,
                bias ? made.get(LlamaTensors.layer(l, "self_attn.k_proj.bias")) : null,
                bias ? made.get(LlamaTensors.layer(l, "self_attn.v_proj.bias")) : null,
                c.outputBias() ? made.get(LlamaTensors.layer(l, "self_attn.o_proj.bias")) : null,
                made.get(LlamaTensors.layer(l, gemma ? "pre_feedforward_layernorm.weight" : "post_attention_layernorm.weight")),
                sparse ? null : made.get(LlamaTensors.layer(l, "mlp.gate_proj.weight")),
                sparse ? null : made.get(LlamaTensors.layer(l, "mlp.up_proj.weight")),
                sparse ? null : made.get(LlamaTensors.layer(l, "mlp.down_proj.weight")),
                c.qkNorm() ? made.get(LlamaTensors.layer(l, "self_attn.q_norm.weight")) : null,
                c.qkNorm() ? made.get(LlamaTensors.layer(l, "self_attn.k_norm.weight")) : null,
                c.mlpBias() ? made.get(LlamaTensors.layer(l, "mlp.gate_proj.bias")) : null,
                c.mlpBias() ? made.get(LlamaTensors.layer(l, "mlp.up_proj.bias")) : null,
                c.mlpBias() ? made.get(LlamaTensors.layer(l, "mlp.down_proj.bias")) : null,
                gemma ? made.get(LlamaTensors.layer(l, "post_attention_layernorm.weight")) : null,
                gemma ? made.get(LlamaTensors.layer(l, "post_feedforward_layernorm.weight")) : null,
                moe);
    }
}
