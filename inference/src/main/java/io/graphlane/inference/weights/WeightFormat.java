package io.graphlane.inference.weights;

import io.graphlane.core.GraphlaneException;
import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;

/**
 * How a model's weights are held in memory once loaded (the {@code --weights} option). Norms and biases
 * are always F32; what changes is the matrices. On a GPU ({@code GpuInference}) every format but
 * {@link #Q8} is accepted and means what it means on the CPU (stored F16/BF16 matrices stay 16-bit); on
 * a backend that holds F32 only just {@link #STORED} and {@link #F32} are, and both widen F16/BF16 to F32.
 */
public enum WeightFormat {
    /** Every matrix in the checkpoint's own dtype: F32 stays F32, F16/BF16 stay 16-bit (used in place where aligned). */
    STORED,
    /** Every matrix widened to F32 (twice the memory of a 16-bit checkpoint). */
    F32,
    /** Every matrix in bfloat16 (an F32 checkpoint is rounded to it at load). */
    BF16,
    /**
     * The projection and MLP matrices (q, k, v, o, gate, up, down) quantized at load to 8 bits in blocks
     * of 32 with one scale each; embeddings and the head as {@link #STORED}.
     */
    Q8;

    /** The option value naming this format ({@code stored}, {@code f32}, {@code bf16}, {@code q8}). */
    public String optionValue() {
        return name().toLowerCase(Locale.ROOT);
    }

    /**
     * Refuses this format for stages split over {@code degree} tensor-parallel shards where they cannot hold it: a
     * shard holds F32 weights, so only {@link #STORED} and {@link #F32} are accepted there (any format at degree 1).
     *
     * @throws GraphlaneException naming both options and the formats accepted
     */
    public void requireTensorParallel(int degree) {
        if (degree > 1 && (this == BF16 || this == Q8)) {
            throw new GraphlaneException("--weights " + optionValue() + " is not supported with --tensor-parallel "
                    + degree + ": tensor-parallel shards hold F32 weights; use --weights stored or f32");
        }
    }

    /**
     * The format {@code value} names, case-insensitively.
     *
     * @throws GraphlaneException naming {@code option}, the value and the accepted values otherwise
     */
    public static WeightFormat parse(String option, String value) {
        String v = value == null ? "" : value.trim();
        for (WeightFormat f : values()) {
            if (f.optionValue().equalsIgnoreCase(v)) {
                return f;
            }
        }
        throw new GraphlaneException(option + ": '" + value + "' is not a weight format; use one of "
                + Arrays.stream(values()).map(WeightFormat::optionValue).collect(Collectors.joining(", ")));
    }
}
