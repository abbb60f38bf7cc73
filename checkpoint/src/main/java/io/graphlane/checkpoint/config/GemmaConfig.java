package io.graphlane.checkpoint.config;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.Objects;
import java.util.Optional;

/**
 * What a Gemma 2 or Gemma 3 (text) decoder adds to the Llama-family layer, read from config.json as transformers reads it
 * ({@code models/gemma2/modeling_gemma2.py}, {@code models/gemma3/modeling_gemma3.py} and their configuration files,
 * 4.57 and 5.x). Besides these values, every Gemma norm scales by {@code 1 + w}, the MLP is gated by
 * {@code hidden_activation} (tanh GELU by default; Gemma ignores {@code hidden_act}), and each layer norms the attention
 * output and the MLP output before adding them to the residual stream.
 *
 * @param queryPreAttnScalar    {@code query_pre_attn_scalar}: attention scores are scaled by its inverse square root
 *                              (default 256), not by {@code head_dim}'s
 * @param attnLogitSoftcapping  {@code attn_logit_softcapping}: scores become {@code c · tanh(s / c)} before the softmax;
 *                              0 for none ({@code null}; Gemma 2's default is 50, Gemma 3's none)
 * @param finalLogitSoftcapping {@code final_logit_softcapping}: the same on the logits; 0 for none (Gemma 2's default 30)
 * @param slidingRope           the rotary embedding of the sliding-window layers: Gemma 3's local base
 *                              ({@code rope_local_base_freq}, or 5.x's {@code rope_parameters.sliding_attention});
 *                              for Gemma 2 the model's one rotary embedding
 * @param embeddingScale        the factor on the embeddings, {@code sqrt(hidden_size)} rounded to the model's dtype
 *                              (transformers makes it a tensor of the hidden states' dtype: 48.0 for a hidden size of
 *                              2304, 55.5 in bfloat16 for 3072)
 */
public record GemmaConfig(double queryPreAttnScalar, double attnLogitSoftcapping, double finalLogitSoftcapping,
                          RopeConfig slidingRope, float embeddingScale) {

    /** The fields only Gemma reads; refused on other architectures. */
    static final java.util.Set<String> FIELDS = java.util.Set.of("query_pre_attn_scalar", "attn_logit_softcapping",
            "final_logit_softcapping", "hidden_activation", "rope_local_base_freq", "sliding_window_pattern",
            "_sliding_window_pattern", "use_bidirectional_attention");

    /** Checks the values. */
    public GemmaConfig {
        Objects.requireNonNull(slidingRope, "slidingRope");
        if (!(queryPreAttnScalar > 0) || !(attnLogitSoftcapping >= 0) || !(finalLogitSoftcapping >= 0) || !(embeddingScale > 0)) {
            throw new IllegalArgumentException("Gemma: query_pre_attn_scalar and the embedding scale must be positive, the soft caps"
                    + " 0 or positive; found " + queryPreAttnScalar + ", " + embeddingScale + ", " + attnLogitSoftcapping + ", "
                    + finalLogitSoftcapping);
        }
    }

    /** The attention scores' scale, {@code query_pre_attn_scalar^-0.5}. */
    public double attentionScale() {
        return 1.0 / Math.sqrt(queryPreAttnScalar);
    }

    /** One line for {@code inspect}: the scale, the caps, the embedding scale and the sliding layers' RoPE. */
    @Override
    public String toString() {
        return "query_pre_attn_scalar " + queryPreAttnScalar + ", attention soft cap " + (attnLogitSoftcapping > 0 ? attnLogitSoftcapping : "none")
                + ", final soft cap " + (finalLogitSoftcapping > 0 ? finalLogitSoftcapping : "none") + ", embedding scale " + embeddingScale
                + ", sliding layers' rope " + slidingRope;
    }

    /** Reads the Gemma fields of {@code f} for {@code arch}; {@code slidingRope} comes from the rope reader. */
    static GemmaConfig read(ConfigFields f, Architecture arch, int hidden, RopeConfig slidingRope, Optional<String> dtype) {
        if (f.bool("use_bidirectional_attention", false)) {
            throw f.refuse("use_bidirectional_attention", "is true (an encoder's bidirectional attention); graphlane runs Gemma "
                    + "as a causal decoder only");
        }
        double scalar = f.positiveDouble("query_pre_attn_scalar", 256);
        boolean gemma2 = arch == Architecture.GEMMA2;
        double attnCap = cap(f, "attn_logit_softcapping", gemma2 ? 50.0 : 0);
        double finalCap = cap(f, "final_logit_softcapping", gemma2 ? 30.0 : 0);
        return new GemmaConfig(scalar, attnCap, finalCap, slidingRope, embeddingScale(hidden, dtype));
    }

    /** A soft cap: {@code absent} when the field is missing, 0 (none) when it is null, else a positive number. */
    private static double cap(ConfigFields f, String name, double absent) {
        JsonNode v = f.root.get(name);
        if (v == null) {
            return absent;
        }
        return v.isNull() ? 0 : f.positiveDouble(name);
    }

    /**
     * {@code sqrt(hidden)} as transformers' Gemma holds it: a tensor of the hidden states' dtype, here the dtype the
     * config declares ({@code torch_dtype}, or 5.x's {@code dtype}; float32 when absent), rounded to nearest-even.
     */
    static float embeddingScale(int hidden, Optional<String> dtype) {
        double root = Math.sqrt(hidden);
        return switch (dtype.orElse("float32")) {
            case "bfloat16" -> roundToMantissa(root, 7);
            case "float16" -> roundToMantissa(root, 10);
            default -> (float) root;
        };
    }

    /** {@code v} (positive, normal) rounded to nearest-even with {@code bits} explicit mantissa bits. */
    static float roundToMantissa(double v, int bits) {
        double ulp = Math.scalb(1.0, Math.getExponent(v) - bits);
        return (float) (Math.rint(v / ulp) * ulp);
    }
}
