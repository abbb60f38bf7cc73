package io.graphlane.backend.cpu.nn;

/** The neural ops written as the plainest loops over Java arrays, in double where it helps, to check the CPU kernels against. */
final class Reference {
    private Reference() {
    }

    static float[] linear(float[] x, int n, int k, float[] w, int m) {
        float[] out = new float[n * m];
        for (int r = 0; r < n; r++) {
            for (int o = 0; o < m; o++) {
                double sum = 0;
                for (int i = 0; i < k; i++) {
                    sum += (double) x[r * k + i] * w[o * k + i];
                }
                out[r * m + o] = (float) sum;
            }
        }
        return out;
    }

    static float[] rmsNorm(float[] x, int n, int d, float[] w, float eps) {
        float[] out = new float[n * d];
        for (int r = 0; r < n; r++) {
            double mean = 0;
            for (int i = 0; i < d; i++) {
                mean += (double) x[r * d + i] * x[r * d + i] / d;
            }
            double scale = 1 / Math.sqrt(mean + eps);
            for (int i = 0; i < d; i++) {
                out[r * d + i] = (float) (w[i] * x[r * d + i] * scale);
            }
        }
        return out;
    }

    /** HF's apply_rotary_pos_emb: x·cos + rotate_half(x)·sin with cos/sin of cat(freqs, freqs). */
    static float[] rope(float[] x, int[] positions, int heads, int headDim, double theta) {
        float[] out = x.clone();
        int half = headDim / 2;
        for (int r = 0; r < positions.length; r++) {
            for (int h = 0; h < heads; h++) {
                int base = (r * heads + h) * headDim;
                for (int j = 0; j < headDim; j++) {
                    int i = j % half;
                    double angle = positions[r] * Math.pow(theta, -2.0 * i / headDim);
                    double rotated = j < half ? -x[base + j + half] : x[base + j - half];
                    out[base + j] = (float) (x[base + j] * Math.cos(angle) + rotated * Math.sin(angle));
                }
            }
        }
        return out;
    }

    static float[] attention(float[] q, float[] k, float[] v, int[] positions, int heads, int kvHeads, int headDim) {
        return attention(q, k, v, positions, heads, kvHeads, headDim, Integer.MAX_VALUE);
    }

    /**
     * Attention with a full mask, as Hugging Face builds it: query row {@code r} may attend to key {@code t} when
     * {@code t <= positions[r]} (causal) and {@code positions[r] - t < window} (masking_utils' sliding_window_overlay,
     * {@code kv_idx > q_idx - sliding_window}); masked scores are minus infinity before the softmax, in float64.
     */
    static float[] attention(float[] q, float[] k, float[] v, int[] positions, int heads, int kvHeads, int headDim, int window) {
        int width = heads * headDim;
        int kvWidth = kvHeads * headDim;
        float[] out = new float[positions.length * width];
        for (int r = 0; r < positions.length; r++) {
            for (int h = 0; h < heads; h++) {
                int kvh = h / (heads / kvHeads);
                int keys = k.length / kvWidth;
                double[] scores = new double[keys];
                double max = Double.NEGATIVE_INFINITY;
                for (int t = 0; t < keys; t++) {
                    boolean allowed = t <= positions[r] && (long) positions[r] - t < window;
                    if (!allowed) {
                        scores[t] = Double.NEGATIVE_INFINITY;
                        continue;
                    }
                    double dot = 0;
                    for (int i = 0; i < headDim; i++) {
                        dot += (double) q[r * width + h * headDim + i] * k[t * kvWidth + kvh * headDim + i];
                    }
                    scores[t] = dot / Math.sqrt(headDim);
                    max = Math.max(max, scores[t]);
                }
                double sum = 0;
                for (int t = 0; t < keys; t++) {
                    scores[t] = Math.exp(scores[t] - max);
                    sum += scores[t];
                }
                for (int i = 0; i < headDim; i++) {
                    double acc = 0;
                    for (int t = 0; t < scores.length; t++) {
                        acc += scores[t] / sum * v[t * kvWidth + kvh * headDim + i];
                    }
                    out[r * width + h * headDim + i] = (float) acc;
                }
            }
        }
        return out;
    }
}
