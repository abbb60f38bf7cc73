package io.graphlane.inference.llama;

import io.graphlane.checkpoint.config.GemmaConfig;
import io.graphlane.checkpoint.config.MoeConfig;
import io.graphlane.checkpoint.config.RopeConfig;
import io.graphlane.core.GraphlaneException;
import io.graphlane.core.nn.GateActivation;
import io.graphlane.core.nn.NeuralOps;
import io.graphlane.core.nn.RotaryTable;
import java.util.Collections;
import java.util.List;
import java.util.Objects;

/**
 * The hyperparameters of a Llama-family decoder (Llama, Mistral, Qwen2, Qwen3, Phi-3), with Hugging Face
 * meanings. Validated on construction: every size positive, heads dividing into kv-head groups.
 *
 * @param hiddenSize          width of the residual stream ({@code hidden_size})
 * @param intermediateSize    width of the MLP ({@code intermediate_size})
 * @param layerCount          decoder layers ({@code num_hidden_layers})
 * @param headCount           query heads ({@code num_attention_heads})
 * @param kvHeadCount         key/value heads ({@code num_key_value_heads}); fewer than heads is grouped-query attention
 * @param headDim             features per head ({@code head_dim}, by default hidden / heads)
 * @param vocabSize           rows of the embedding and the head ({@code vocab_size})
 * @param rmsNormEps          RMSNorm epsilon ({@code rms_norm_eps})
 * @param ropeTheta           RoPE base ({@code rope_theta})
 * @param tieWordEmbeddings   the head reuses the embedding matrix ({@code tie_word_embeddings})
 * @param qkvBias             q/k/v projections carry biases (Qwen2; Llama with {@code attention_bias})
 * @param outputBias          the attention output projection carries a bias (Llama with {@code attention_bias})
 * @param maxPositions        the longest sequence a KV cache may hold ({@code max_position_embeddings})
 * @param rope                the rotary embedding, as transformers computes it (its base is {@code ropeTheta})
 * @param activation          the MLP's gate activation ({@code hidden_act})
 * @param mlpBias             the gate, up and down projections carry biases ({@code mlp_bias})
 * @param qkNorm              queries and keys pass a per-head RMSNorm before RoPE (Qwen3's {@code q_norm}, {@code k_norm})
 * @param fusedProjections    the checkpoint fuses q/k/v into {@code qkv_proj} and gate/up into {@code gate_up_proj} (Phi-3),
 *                            split at load
 * @param restartsCache       the model's generation recomputes every cached position once the sequence first grows past the
 *                            rope's original context (Phi-3's {@code prepare_inputs_for_generation} with longrope drops the
 *                            KV cache then, so every key is rotated again with the long factors); see {@link #restarted}
 * @param attentionWindows    per decoder layer, the positions a query attends to, its own included (a sliding window:
 *                            Mistral's {@code sliding_window}, Qwen2's sliding layers), or {@link NeuralOps#NO_WINDOW}
 *                            for full causal attention; one entry per layer
 * @param gemma               Gemma 2/3's additions ((1 + w) norms, norms of the attention and MLP outputs, embedding
 *                            scale, query_pre_attn_scalar, soft caps, the sliding layers' RoPE), or {@code null}
 * @param moe                 the sparse mixture-of-experts block of Mixtral and Qwen3-MoE (which layers have it, the experts,
 *                            the router's top-k), or {@code null} for a dense model
 */
public record LlamaConfig(int hiddenSize, int intermediateSize, int layerCount, int headCount, int kvHeadCount, int headDim,
                          int vocabSize, float rmsNormEps, float ropeTheta, boolean tieWordEmbeddings, boolean qkvBias, boolean outputBias,
                          int maxPositions, RopeConfig rope, GateActivation activation, boolean mlpBias, boolean qkNorm,
                          boolean fusedProjections, boolean restartsCache, List<Integer> attentionWindows, GemmaConfig gemma,
                          MoeConfig moe) {

    /** Validates every size, naming the HF field at fault. */
    public LlamaConfig {
        requirePositive("hidden_size", hiddenSize);
        requirePositive("intermediate_size", intermediateSize);
        requirePositive("num_hidden_layers", layerCount);
        requirePositive("num_attention_heads", headCount);
        requirePositive("num_key_value_heads", kvHeadCount);
        requirePositive("head_dim", headDim);
        requirePositive("vocab_size", vocabSize);
        requirePositive("max_position_embeddings", maxPositions);
        if (headCount % kvHeadCount != 0) {
            throw new GraphlaneException("config: num_key_value_heads " + kvHeadCount + " does not divide num_attention_heads " + headCount);
        }
        if (headDim % 2 != 0) {
            throw new GraphlaneException("config: head_dim must be even for rotary embeddings, found " + headDim);
        }
        if (!(rmsNormEps > 0) || !(ropeTheta > 0)) {
            throw new GraphlaneException("config: rms_norm_eps and rope_theta must be positive, found " + rmsNormEps + " and " + ropeTheta);
        }
        Objects.requireNonNull(rope, "rope");
        Objects.requireNonNull(activation, "activation");
        if (rope.rotaryDim(headDim) > headDim || rope.rotaryDim(headDim) < 2) {
            throw new GraphlaneException("config: partial_rotary_factor " + rope.partialRotaryFactor() + " does not fit head_dim " + headDim);
        }
        if (attentionWindows.size() != layerCount) {
            throw new GraphlaneException("config: " + attentionWindows.size() + " attention windows for " + layerCount + " layers");
        }
        for (int window : attentionWindows) {
            requirePositive("sliding_window", window);
        }
        attentionWindows = List.copyOf(attentionWindows);
        if (moe != null && moe.sparseLayers().size() != layerCount) {
            throw new GraphlaneException("config: " + moe.sparseLayers().size() + " sparse-layer flags for " + layerCount + " layers");
        }
    }

    /** This configuration with the mixture-of-experts block {@code moe} (or none for {@code null}). */
    public LlamaConfig withMoe(MoeConfig moe) {
        return new LlamaConfig(hiddenSize, intermediateSize, layerCount, headCount, kvHeadCount, headDim, vocabSize, rmsNormEps,
                ropeTheta, tieWordEmbeddings, qkvBias, outputBias, maxPositions, rope, activation, mlpBias, qkNorm, fusedProjections,
                restartsCache, attentionWindows, gemma, moe);
    }

    /** True when decoder layer {@code layer} (the model's index) runs the sparse mixture-of-experts block instead of a dense MLP. */
    public boolean isSparse(int layer) {
        return moe != null && moe.isSparse(layer);
    }

    /**
     * A configuration whose every layer attends to all earlier positions (no sliding window), with the rotary embedding,
     * activation and projection layout given; not Gemma.
     */
    public LlamaConfig(int hiddenSize, int intermediateSize, int layerCount, int headCount, int kvHeadCount, int headDim,
                       int vocabSize, float rmsNormEps, float ropeTheta, boolean tieWordEmbeddings, boolean qkvBias, boolean outputBias,
                       int maxPositions, RopeConfig rope, GateActivation activation, boolean mlpBias, boolean qkNorm,
                       boolean fusedProjections, boolean restartsCache) {
        this(hiddenSize, intermediateSize, layerCount, headCount, kvHeadCount, headDim, vocabSize, rmsNormEps, ropeTheta,
                tieWordEmbeddings, qkvBias, outputBias, maxPositions, rope, activation, mlpBias, qkNorm, fusedProjections,
                restartsCache, fullAttention(layerCount), null, null);
    }

    /**
     * A Llama 2-shaped decoder: plain RoPE with base {@code ropeTheta} over whole heads, silu, no MLP biases, every layer
     * attending to all earlier positions (no sliding window).
     */
    public LlamaConfig(int hiddenSize, int intermediateSize, int layerCount, int headCount, int kvHeadCount, int headDim,
                       int vocabSize, float rmsNormEps, float ropeTheta, boolean tieWordEmbeddings, boolean qkvBias, boolean outputBias,
                       int maxPositions) {
        this(hiddenSize, intermediateSize, layerCount, headCount, kvHeadCount, headDim, vocabSize, rmsNormEps, ropeTheta,
                tieWordEmbeddings, qkvBias, outputBias, maxPositions, RopeConfig.plain(ropeTheta, maxPositions), GateActivation.SILU,
                false, false, false, false);
    }

    /** This configuration with a KV cache of at most {@code positions} positions; everything else as it is. */
    public LlamaConfig withMaxPositions(int positions) {
        return new LlamaConfig(hiddenSize, intermediateSize, layerCount, headCount, kvHeadCount, headDim, vocabSize, rmsNormEps,
                ropeTheta, tieWordEmbeddings, qkvBias, outputBias, positions, rope, activation, mlpBias, qkNorm, fusedProjections,
                restartsCache, attentionWindows, gemma, moe);
    }

    /** This configuration with {@code windows} as its per-layer attention windows. */
    public LlamaConfig withAttentionWindows(List<Integer> windows) {
        return new LlamaConfig(hiddenSize, intermediateSize, layerCount, headCount, kvHeadCount, headDim, vocabSize, rmsNormEps,
                ropeTheta, tieWordEmbeddings, qkvBias, outputBias, maxPositions, rope, activation, mlpBias, qkNorm, fusedProjections,
                restartsCache, windows, gemma, moe);
    }

    /** This configuration with Gemma's additions {@code gemma}. */
    public LlamaConfig withGemma(GemmaConfig gemma) {
        return new LlamaConfig(hiddenSize, intermediateSize, layerCount, headCount, kvHeadCount, headDim, vocabSize, rmsNormEps,
                ropeTheta, tieWordEmbeddings, qkvBias, outputBias, maxPositions, rope, activation, mlpBias, qkNorm, fusedProjections,
                restartsCache, attentionWindows, gemma, moe);
    }

    /** True for Gemma's layer: the attention and the MLP outputs are normed before the residual add ({@code post_*} norms). */
    public boolean normsBlockOutputs() {
        return gemma != null;
    }

    /** The offset added to every RMSNorm weight: 1 for Gemma's {@code x · (1 + w)}, else 0. */
    public float normWeightOffset() {
        return gemma == null ? 0f : 1f;
    }

    /** The factor on the token embeddings: Gemma's {@code sqrt(hidden_size)} in the model's dtype, else 1. */
    public float embeddingScale() {
        return gemma == null ? 1f : gemma.embeddingScale();
    }

    /** The factor on the attention scores: {@code 1/sqrt(query_pre_attn_scalar)} for Gemma, else {@code 1/sqrt(head_dim)}. */
    public float attentionScale() {
        return gemma == null ? NeuralOps.plainAttentionScale(headDim) : (float) gemma.attentionScale();
    }

    /** Gemma's {@code attn_logit_softcapping}, 0 for none. */
    public float attentionSoftcap() {
        return gemma == null ? 0f : (float) gemma.attnLogitSoftcapping();
    }

    /** Gemma's {@code final_logit_softcapping}, 0 for none. */
    public float finalSoftcap() {
        return gemma == null ? 0f : (float) gemma.finalLogitSoftcapping();
    }

    /** The rotary embedding of decoder layer {@code layer}: Gemma's sliding layers have their own, every other layer {@link #rope}. */
    public RopeConfig rope(int layer) {
        return gemma != null && attentionWindow(layer) != NeuralOps.NO_WINDOW ? gemma.slidingRope() : rope;

    }

    /**
     * The segment a step of {@code segment} runs as: itself, or, for a model that {@link #restartsCache} when a decode
     * step first takes the sequence past the rope's original context (the cache holds at most that many positions and
     * the step ends past it), the whole sequence from position 0, so every position is computed again with the
     * frequencies of the longer sequence, as transformers' Phi-3 generation does. Depends on the segment alone, so every
     * stage expands a step alike.
     */
    public Segment restarted(Segment segment) {
        int original = rope.originalMaxPositions();
        int end = segment.startPosition() + segment.length();
        if (!restartsCache || segment.startPosition() == 0 || segment.startPosition() > original || end <= original) {
            return segment;
        }
        return new Segment(segment.requestId(), 0, end, segment.reservedPositions());
    }

    /** The rotary frequencies of a forward pass whose largest position is {@code sequenceLength - 1}. */
    public RotaryTable rotaryTable(int sequenceLength) {
        return rope.table(headDim, sequenceLength);
    }

    /** The rotary frequencies of decoder layer {@code layer} in a forward pass whose largest position is {@code sequenceLength - 1}. */
    public RotaryTable rotaryTable(int layer, int sequenceLength) {
        return rope(layer).table(headDim, sequenceLength);
    }

    /** The attention window of decoder layer {@code layer} (the model's index, from 0): positions seen, or {@link NeuralOps#NO_WINDOW}. */
    public int attentionWindow(int layer) {
        return attentionWindows.get(layer);
    }

    /** True if some layer attends within a sliding window. */
    public boolean slides() {
        return attentionWindows.stream().anyMatch(w -> w != NeuralOps.NO_WINDOW);
    }

    /** Width of the concatenated query heads, {@code headCount × headDim}. */
    public int queryWidth() {
        return headCount * headDim;
    }

    /** Width of the concatenated key (or value) heads, {@code kvHeadCount × headDim}. */
    public int kvWidth() {
        return kvHeadCount * headDim;
    }

    private static List<Integer> fullAttention(int layerCount) {
        return Collections.nCopies(Math.max(0, layerCount), NeuralOps.NO_WINDOW);
    }

    private static void requirePositive(String field, int value) {
        if (value <= 0) {
            throw new GraphlaneException("config: " + field + " must be positive, found " + value);
        }
    }
}
