package io.graphlane.inference.llama;

import io.graphlane.checkpoint.config.RopeConfig;
import io.graphlane.core.GraphlaneException;
import io.graphlane.core.nn.GateActivation;
import io.graphlane.core.nn.RotaryTable;
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
 */
public record LlamaConfig(int hiddenSize, int intermediateSize, int layerCount, int headCount, int kvHeadCount, int headDim,
                          int vocabSize, float rmsNormEps, float ropeTheta, boolean tieWordEmbeddings, boolean qkvBias, boolean outputBias,
                          int maxPositions, RopeConfig rope, GateActivation activation, boolean mlpBias, boolean qkNorm,
                          boolean fusedProjections, boolean restartsCache) {

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
    }

    /** A Llama 2-shaped decoder: plain RoPE with base {@code ropeTheta} over whole heads, silu, no MLP biases. */
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
                restartsCache);
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

    /** Width of the concatenated query heads, {@code headCount × headDim}. */
    public int queryWidth() {
        return headCount * headDim;
    }

    /** Width of the concatenated key (or value) heads, {@code kvHeadCount × headDim}. */
    public int kvWidth() {
        return kvHeadCount * headDim;
    }

    private static void requirePositive(String field, int value) {
        if (value <= 0) {
            throw new GraphlaneException("config: " + field + " must be positive, found " + value);
        }
    }
}
