package io.graphlane.inference.llama;

import java.util.Map;

/**
 * A Llama forward pass written as the plainest loops over Java arrays in double precision,
 * recomputing the whole prompt: the check for the stage code on small random models.
 */
final class ReferenceLlama {
    private final LlamaConfig c;
    private final Map<String, float[]> w;

    ReferenceLlama(LlamaConfig config, Map<String, float[]> weights) {
        this.c = config;
        this.w = weights;
    }

    /** Logits at every position of {@code ids}, {@code [positions][vocab]}. */
    double[][] logits(int[] ids) {
        int n = ids.length;
        int d = c.hiddenSize();
        double[][] x = new double[n][d];
        float[] embed = w.get(LlamaTensors.EMBEDDING);
        for (int t = 0; t < n; t++) {
            for (int i = 0; i < d; i++) {
                x[t][i] = embed[ids[t] * d + i];
            }
        }
        for (int l = 0; l < c.layerCount(); l++) {
            double[][] h = rmsNorm(x, w.get(LlamaTensors.layer(l, "input_layernorm.weight")));
            double[][] q = linear(h, w.get(LlamaTensors.layer(l, "self_attn.q_proj.weight")), c.queryWidth(), bias(l, "q"));
            double[][] k = linear(h, w.get(LlamaTensors.layer(l, "self_attn.k_proj.weight")), c.kvWidth(), bias(l, "k"));
            double[][] v = linear(h, w.get(LlamaTensors.layer(l, "self_attn.v_proj.weight")), c.kvWidth(), bias(l, "v"));
            rope(q);
            rope(k);
            double[][] attended = attention(q, k, v, c.attentionWindow(l));
            float[] outputBias = c.outputBias() ? w.get(LlamaTensors.layer(l, "self_attn.o_proj.bias")) : null;
            add(x, linear(attended, w.get(LlamaTensors.layer(l, "self_attn.o_proj.weight")), d, outputBias));
            h = rmsNorm(x, w.get(LlamaTensors.layer(l, "post_attention_layernorm.weight")));
            double[][] gate = linear(h, w.get(LlamaTensors.layer(l, "mlp.gate_proj.weight")), c.intermediateSize(), null);
            double[][] up = linear(h, w.get(LlamaTensors.layer(l, "mlp.up_proj.weight")), c.intermediateSize(), null);
            for (int t = 0; t < n; t++) {
                for (int i = 0; i < c.intermediateSize(); i++) {
                    double g = gate[t][i];
                    gate[t][i] = g / (1 + Math.exp(-g)) * up[t][i];
                }
            }
            add(x, linear(gate, w.get(LlamaTensors.layer(l, "mlp.down_proj.weight")), d, null));
        }
        double[][] normed = rmsNorm(x, w.get(LlamaTensors.FINAL_NORM));
        float[] head = w.get(c.tieWordEmbeddings() ? LlamaTensors.EMBEDDING : LlamaTensors.LM_HEAD);
        return linear(normed, head, c.vocabSize(), null);
    }

    private float[] bias(int l, String which) {
        return c.qkvBias() ? w.get(LlamaTensors.layer(l, "self_attn." + which + "_proj.bias")) : null;
    }

    private double[][] rmsNorm(double[][] x, float[] weight) {
        double[][] out = new double[x.length][x[0].length];
        for (int t = 0; t < x.length; t++) {
            double mean = 0;
            for (double v : x[t]) {
                mean += v * v / x[t].length;
            }
            double scale = 1 / Math.sqrt(mean + c.rmsNormEps());
            for (int i = 0; i < x[t].length; i++) {
                out[t][i] = x[t][i] * scale * weight[i];
            }
        }
        return out;
    }

    private static double[][] linear(double[][] x, float[] weight, int outFeatures, float[] bias) {
        int k = x[0].length;
        double[][] out = new double[x.length][outFeatures];
        for (int t = 0; t < x.length; t++) {
            for (int o = 0; o < outFeatures; o++) {
                double sum = bias == null ? 0 : bias[o];
                for (int i = 0; i < k; i++) {
                    sum += x[t][i] * weight[o * k + i];
                }
                out[t][o] = sum;
            }
        }
        return out;
    }

    private void rope(double[][] x) {
        int hd = c.headDim();
        int half = hd / 2;
        for (int t = 0; t < x.length; t++) {
            for (int h = 0; h < x[t].length / hd; h++) {
                for (int i = 0; i < half; i++) {
                    double angle = t * Math.pow(c.ropeTheta(), -2.0 * i / hd);
                    double x1 = x[t][h * hd + i];
                    double x2 = x[t][h * hd + i + half];
                    x[t][h * hd + i] = x1 * Math.cos(angle) - x2 * Math.sin(angle);
                    x[t][h * hd + i + half] = x2 * Math.cos(angle) + x1 * Math.sin(angle);
                }
            }
        }
    }

    /** Causal attention within {@code window}: position {@code t} attends to {@code s <= t} with {@code t - s < window}. */
    private double[][] attention(double[][] q, double[][] k, double[][] v, int window) {
        int hd = c.headDim();
        int group = c.headCount() / c.kvHeadCount();
        double[][] out = new double[q.length][c.queryWidth()];
        for (int t = 0; t < q.length; t++) {
            for (int h = 0; h < c.headCount(); h++) {
                int kv = h / group;
                double[] p = new double[t + 1];
                double max = Double.NEGATIVE_INFINITY;
                int first = (int) Math.max(0, (long) t - window + 1);
                for (int s = first; s <= t; s++) {
                    double dot = 0;
                    for (int i = 0; i < hd; i++) {
                        dot += q[t][h * hd + i] * k[s][kv * hd + i];
                    }
                    p[s] = dot / Math.sqrt(hd);
                    max = Math.max(max, p[s]);
                }
                double sum = 0;
                for (int s = first; s <= t; s++) {
                    p[s] = Math.exp(p[s] - max);
                    sum += p[s];
                }
                for (int s = first; s <= t; s++) {
                    for (int i = 0; i < hd; i++) {
                        out[t][h * hd + i] += p[s] / sum * v[s][kv * hd + i];
                    }
                }
            }
        }
        return out;
    }

    private static void add(double[][] x, double[][] y) {
        for (int t = 0; t < x.length; t++) {
            for (int i = 0; i < x[t].length; i++) {
                x[t][i] += y[t][i];
            }
        }
    }
}
