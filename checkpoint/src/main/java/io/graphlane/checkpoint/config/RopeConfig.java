package io.graphlane.checkpoint.config;

import io.graphlane.core.nn.RotaryTable;
import java.util.Arrays;
import java.util.Objects;

/**
 * A model's rotary position embedding as Hugging Face transformers computes it ({@code modeling_rope_utils.py}):
 * the base, the rotating share of each head, and the scaling variant with its parameters. {@link #table} gives the
 * frequencies of one forward pass; for {@code dynamic} and {@code longrope} they depend on that pass's sequence
 * length (the largest position it rotates, plus one), as transformers recomputes them per forward, so with a KV cache
 * the keys already cached keep the frequencies they were rotated with.
 *
 * @param type                 the variant
 * @param theta                the base ({@code rope_theta})
 * @param partialRotaryFactor  the share of each head that rotates ({@code partial_rotary_factor}, 1 = all)
 * @param factor               the scaling factor ({@code factor}; 1 when the variant has none)
 * @param originalMaxPositions the context the model was pretrained for ({@code original_max_position_embeddings}
 *                             of the rope parameters, else of config.json, else {@code max_position_embeddings})
 * @param maxPositions         config.json's {@code max_position_embeddings}
 * @param lowFreqFactor        llama3's {@code low_freq_factor}
 * @param highFreqFactor       llama3's {@code high_freq_factor}
 * @param betaFast             yarn's {@code beta_fast} (default 32)
 * @param betaSlow             yarn's {@code beta_slow} (default 1)
 * @param mscale               yarn's {@code mscale} (0 when absent)
 * @param mscaleAllDim         yarn's {@code mscale_all_dim} (0 when absent)
 * @param truncate             yarn's {@code truncate} (default true)
 * @param attentionFactor      the factor on cos and sin, resolved as transformers resolves it (1 for the variants without one)
 * @param shortFactor          longrope's {@code short_factor} (empty otherwise)
 * @param longFactor           longrope's {@code long_factor} (empty otherwise)
 */
public record RopeConfig(Type type, double theta, double partialRotaryFactor, double factor, int originalMaxPositions,
                         int maxPositions, double lowFreqFactor, double highFreqFactor, double betaFast, double betaSlow,
                         double mscale, double mscaleAllDim, boolean truncate, double attentionFactor, double[] shortFactor,
                         double[] longFactor) {

    /** The variants, by their {@code rope_type}. */
    public enum Type {
        DEFAULT("default"), LINEAR("linear"), DYNAMIC("dynamic"), LLAMA3("llama3"), YARN("yarn"), LONGROPE("longrope");

        private final String hfName;

        Type(String hfName) {
            this.hfName = hfName;
        }

        /** The {@code rope_type} value. */
        public String hfName() {
            return hfName;
        }
    }

    /** Copies the factor arrays. */
    public RopeConfig {
        Objects.requireNonNull(type, "type");
        shortFactor = shortFactor.clone();
        longFactor = longFactor.clone();
    }

    /** Plain RoPE with base {@code theta} over whole heads. */
    public static RopeConfig plain(double theta, int maxPositions) {
        return new RopeConfig(Type.DEFAULT, theta, 1.0, 1.0, maxPositions, maxPositions, 0, 0, 32, 1, 0, 0, true, 1.0,
                new double[0], new double[0]);
    }

    /** The features of a head of {@code headDim} that rotate: {@code int(headDim · partial_rotary_factor)}. */
    public int rotaryDim(int headDim) {
        return (int) (headDim * partialRotaryFactor);
    }

    /**
     * The longest sequence the model runs by default: {@code max_position_embeddings}, except where the variant's own
     * parameters extend it: {@code dynamic} grows its base from {@code max_position_embeddings} and is meant to run
     * {@code factor} times past it; {@code yarn} scales the original context by {@code factor}. (vLLM derives its default
     * maximum length the same way for these two.) transformers sets no limit at all; a caller may allow more.
     */
    public int contextLength() {
        double extended = switch (type) {
            case DYNAMIC -> (double) maxPositions * factor;
            case YARN -> Math.max(maxPositions, (double) originalMaxPositions * factor);
            default -> maxPositions;
        };
        return (int) Math.min(Integer.MAX_VALUE - 1, Math.max(maxPositions, Math.floor(extended)));
    }

    /** True when the frequencies depend on the forward's sequence length ({@code dynamic}, {@code longrope}). */
    public boolean dependsOnLength() {
        return type == Type.DYNAMIC || type == Type.LONGROPE;
    }

    /**
     * The frequencies of a forward pass over positions up to {@code sequenceLength - 1}, for heads of {@code headDim}.
     * Computed in double; transformers computes them in F32, which differs by a few ulps.
     */
    public RotaryTable table(int headDim, int sequenceLength) {
        int dim = rotaryDim(headDim);
        int half = dim / 2;
        double[] inv = new double[half];
        double base = theta;
        if (type == Type.DYNAMIC) {
            // transformers' growth rule: exact up to the original length, then the base grows with the sequence
            double length = Math.max(sequenceLength, originalMaxPositions);
            base = theta * Math.pow(factor * length / originalMaxPositions - (factor - 1), dim / (double) (dim - 2));
        }
        for (int i = 0; i < half; i++) {
            inv[i] = 1.0 / Math.pow(base, (2.0 * i) / dim);
        }
        switch (type) {
            case DEFAULT, DYNAMIC -> { }
            case LINEAR -> {
                for (int i = 0; i < half; i++) {
                    inv[i] /= factor;
                }
            }
            case LLAMA3 -> llama3(inv);
            case YARN -> yarn(inv, dim);
            case LONGROPE -> {
                double[] ext = sequenceLength > originalMaxPositions ? longFactor : shortFactor;
                for (int i = 0; i < half; i++) {
                    inv[i] /= ext[i];
                }
            }
        }
        return new RotaryTable(dim, inv, attentionFactor);
    }

    private void llama3(double[] inv) {
        double lowWavelen = originalMaxPositions / lowFreqFactor;
        double highWavelen = originalMaxPositions / highFreqFactor;
        for (int i = 0; i < inv.length; i++) {
            double wavelen = 2 * Math.PI / inv[i];
            if (wavelen > lowWavelen) {
                inv[i] = inv[i] / factor;
            } else if (wavelen >= highWavelen) {
                double smooth = (originalMaxPositions / wavelen - lowFreqFactor) / (highFreqFactor - lowFreqFactor);
                inv[i] = (1 - smooth) * inv[i] / factor + smooth * inv[i];
            }
        }
    }

    private void yarn(double[] inv, int dim) {
        double low = correctionDim(betaFast, dim);
        double high = correctionDim(betaSlow, dim);
        if (truncate) {
            low = Math.floor(low);
            high = Math.ceil(high);
        }
        low = Math.max(low, 0);
        high = Math.min(high, dim - 1);
        if (low == high) {
            high += 0.001;
        }
        for (int i = 0; i < inv.length; i++) {
            double ramp = Math.min(1, Math.max(0, (i - low) / (high - low)));
            double extrapolation = 1 - ramp;
            double extrapolated = inv[i];
            double interpolated = inv[i] / factor;
            inv[i] = interpolated * (1 - extrapolation) + extrapolated * extrapolation;
        }
    }

    private double correctionDim(double rotations, int dim) {
        return dim * Math.log(originalMaxPositions / (rotations * 2 * Math.PI)) / (2 * Math.log(theta));
    }

    /** yarn's {@code get_mscale}. */
    static double yarnMscale(double scale, double mscale) {
        return scale <= 1 ? 1.0 : 0.1 * mscale * Math.log(scale) + 1.0;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof RopeConfig r && r.type == type && r.theta == theta && r.partialRotaryFactor == partialRotaryFactor
                && r.factor == factor && r.originalMaxPositions == originalMaxPositions && r.maxPositions == maxPositions
                && r.lowFreqFactor == lowFreqFactor && r.highFreqFactor == highFreqFactor && r.betaFast == betaFast
                && r.betaSlow == betaSlow && r.mscale == mscale && r.mscaleAllDim == mscaleAllDim && r.truncate == truncate
                && r.attentionFactor == attentionFactor && Arrays.equals(r.shortFactor, shortFactor)
                && Arrays.equals(r.longFactor, longFactor);
    }

    @Override
    public int hashCode() {
        return Objects.hash(type, theta, partialRotaryFactor, factor, originalMaxPositions, attentionFactor)
                + 31 * Arrays.hashCode(shortFactor) + Arrays.hashCode(longFactor);
    }

    @Override
    public String toString() {
        String s = type.hfName() + " (theta " + theta;
        if (partialRotaryFactor != 1.0) {
            s += ", partial_rotary_factor " + partialRotaryFactor;
        }
        if (type != Type.DEFAULT) {
            s += ", factor " + factor + ", original context " + originalMaxPositions;
        }
        if (attentionFactor != 1.0) {
            s += ", attention factor " + attentionFactor;
        }
        return s + ")";
    }
}
