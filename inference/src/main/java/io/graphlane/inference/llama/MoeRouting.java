package io.graphlane.inference.llama;

import java.util.Arrays;

/**
 * Where each row of a step goes in one mixture-of-experts layer, as transformers' {@code MixtralSparseMoeBlock} and
 * {@code Qwen3MoeSparseMoeBlock} route it: a softmax over the row's router logits (all experts), the {@code k} largest
 * probabilities in descending order ({@code torch.topk}; equal probabilities go to the lower expert index), divided by
 * their sum when the model renormalises them.
 *
 * @param rows    the step's rows
 * @param k       experts per row
 * @param experts {@code rows × k} chosen expert indices, row-major, each row's in descending probability
 * @param weights {@code rows × k} the matching routing weights
 */
public record MoeRouting(int rows, int k, int[] experts, float[] weights) {

    /**
     * Routes {@code rows} rows from their router logits ({@code rows × expertCount}, row-major): softmax in double,
     * top-{@code k} with ties to the lower index, renormalised when {@code renormalize}.
     */
    public static MoeRouting route(float[] logits, int rows, int expertCount, int k, boolean renormalize) {
        if (logits.length != rows * expertCount || k < 1 || k > expertCount) {
            throw new IllegalArgumentException("routing " + rows + " rows over " + expertCount + " experts, top-" + k
                    + ": " + logits.length + " logits");
        }
        int[] experts = new int[rows * k];
        float[] weights = new float[rows * k];
        double[] p = new double[expertCount];
        boolean[] taken = new boolean[expertCount];
        for (int r = 0; r < rows; r++) {
            int base = r * expertCount;
            double max = Double.NEGATIVE_INFINITY;
            for (int e = 0; e < expertCount; e++) {
                max = Math.max(max, logits[base + e]);
            }
            double sum = 0;
            for (int e = 0; e < expertCount; e++) {
                p[e] = Math.exp(logits[base + e] - max);
                sum += p[e];
            }
            Arrays.fill(taken, false);
            double kept = 0;
            double[] chosen = new double[k];
            for (int j = 0; j < k; j++) {
                int best = -1;
                for (int e = 0; e < expertCount; e++) {
                    if (!taken[e] && (best < 0 || p[e] > p[best])) {
                        best = e;
                    }
                }
                taken[best] = true;
                experts[r * k + j] = best;
                chosen[j] = p[best] / sum;
                kept += chosen[j];
            }
            for (int j = 0; j < k; j++) {
                weights[r * k + j] = (float) (renormalize ? chosen[j] / kept : chosen[j]);
            }
        }
        return new MoeRouting(rows, k, experts, weights);
    }

    /** The rows that chose {@code expert}, ascending, and in {@code slots} the matching entry of each in {@link #experts}. */
    public int[] rowsOf(int expert, int[] slots) {
        int n = 0;
        for (int i = 0; i < experts.length; i++) {
            if (experts[i] == expert) {
                slots[n++] = i;
            }
        }
        int[] rowsOut = new int[n];
        for (int i = 0; i < n; i++) {
            rowsOut[i] = slots[i] / k;
        }
        return rowsOut;
    }

    /** How many rows chose {@code expert}. */
    public int count(int expert) {
        int n = 0;
        for (int e : experts) {
            n += e == expert ? 1 : 0;
        }
        return n;
    }
}
