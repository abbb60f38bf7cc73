package io.graphlane.inference.llama;

import java.util.Objects;

/**
 * The weights of one decoder layer, in the Hugging Face {@code Linear} layout (one row per output
 * feature). Vectors are {@code 1 × n} tensors. The q/k/v biases exist only for models that have
 * them (Qwen2, Llama with {@code attention_bias}) and are {@code null} otherwise, as is the output
 * projection's bias {@code bo} (Llama and Qwen3 with {@code attention_bias}), Qwen3's per-head query and key norms
 * {@code qNorm}, {@code kNorm} ({@code 1 × headDim}), and the MLP biases {@code bGate}, {@code bUp}, {@code bDown}
 * (Llama with {@code mlp_bias}). Gemma's layer norms the attention output with {@code postAttentionNorm} and the MLP
 * output with {@code postFfnNorm} before each residual add (both {@code null} elsewhere); its {@code ffnNorm} is then
 * {@code pre_feedforward_layernorm}, while Llama's is {@code post_attention_layernorm}. A mixture-of-experts layer
 * (Mixtral, Qwen3-MoE's sparse layers) has {@code moe} in place of the dense MLP: {@code wGate}, {@code wUp} and
 * {@code wDown} are {@code null} then.
 *
 * @param <T> the backend tensor
 */
public record LayerWeights<T>(T attentionNorm, T wq, T wk, T wv, T wo, T bq, T bk, T bv, T bo, T ffnNorm, T wGate, T wUp, T wDown,
                              T qNorm, T kNorm, T bGate, T bUp, T bDown, T postAttentionNorm, T postFfnNorm, MoeWeights<T> moe) {

    /** A layer without Gemma's output norms. */
    public LayerWeights(T attentionNorm, T wq, T wk, T wv, T wo, T bq, T bk, T bv, T bo, T ffnNorm, T wGate, T wUp, T wDown,
                        T qNorm, T kNorm, T bGate, T bUp, T bDown) {
        this(attentionNorm, wq, wk, wv, wo, bq, bk, bv, bo, ffnNorm, wGate, wUp, wDown, qNorm, kNorm, bGate, bUp, bDown, null, null, null);
    }

    /** A layer without the sparse block. */
    public LayerWeights(T attentionNorm, T wq, T wk, T wv, T wo, T bq, T bk, T bv, T bo, T ffnNorm, T wGate, T wUp, T wDown,
                        T qNorm, T kNorm, T bGate, T bUp, T bDown, T postAttentionNorm, T postFfnNorm) {
        this(attentionNorm, wq, wk, wv, wo, bq, bk, bv, bo, ffnNorm, wGate, wUp, wDown, qNorm, kNorm, bGate, bUp, bDown,
                postAttentionNorm, postFfnNorm, null);
    }

    /** A layer without q/k norms and MLP biases. */
    public LayerWeights(T attentionNorm, T wq, T wk, T wv, T wo, T bq, T bk, T bv, T bo, T ffnNorm, T wGate, T wUp, T wDown) {
        this(attentionNorm, wq, wk, wv, wo, bq, bk, bv, bo, ffnNorm, wGate, wUp, wDown, null, null, null, null, null, null, null, null);
    }

    /** Checks that every non-optional weight is present and that the biases come all or none. */
    public LayerWeights {
        Objects.requireNonNull(attentionNorm, "attentionNorm");
        Objects.requireNonNull(wq, "wq");
        Objects.requireNonNull(wk, "wk");
        Objects.requireNonNull(wv, "wv");
        Objects.requireNonNull(wo, "wo");
        Objects.requireNonNull(ffnNorm, "ffnNorm");
        if (moe == null) {
            Objects.requireNonNull(wGate, "wGate");
            Objects.requireNonNull(wUp, "wUp");
            Objects.requireNonNull(wDown, "wDown");
        } else if (wGate != null || wUp != null || wDown != null || bGate != null) {
            throw new IllegalArgumentException("a mixture-of-experts layer has no dense MLP weights");
        }
        if ((bq == null) != (bk == null) || (bq == null) != (bv == null)) {
            throw new IllegalArgumentException("q/k/v biases must be all present or all absent");
        }
        if ((qNorm == null) != (kNorm == null)) {
            throw new IllegalArgumentException("q/k norms must be both present or both absent");
        }
        if ((bGate == null) != (bUp == null) || (bGate == null) != (bDown == null)) {
            throw new IllegalArgumentException("MLP biases must be all present or all absent");
        }
        if ((postAttentionNorm == null) != (postFfnNorm == null)) {
            throw new IllegalArgumentException("the attention and MLP output norms must be both present or both absent");
        }
    }

    /** True when the q/k/v projections carry biases. */
    public boolean hasQkvBias() {
        return bq != null;
    }
}
