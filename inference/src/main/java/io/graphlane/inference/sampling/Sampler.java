package io.graphlane.inference.sampling;

import io.graphlane.scheduler.pipeline.SampledToken;
import io.graphlane.scheduler.pipeline.TokenSampler;
import java.util.Arrays;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * Chooses one request's tokens from logits, following its {@link SamplingParams}. The draws come
 * from a generator seeded once per request, so the same logits in the same order give the same
 * tokens on every run. One instance per request; not thread-safe.
 *
 * <p>It is the request's sampling state too: it counts the tokens it chose, which the presence and frequency
 * penalties read, and knows the prompt's tokens, which the repetition penalty reads with them (a token it returns is
 * taken as generated: the engines publish every token sampled by a step that completed). With log-probabilities asked for, each token carries the log-softmax of the logits it was
 * chosen from after the bias and penalties, before temperature and top-p (the model's distribution as adjusted,
 * the same for greedy and sampled requests), and the most likely alternatives. Without adjustments and
 * log-probabilities it reads the logits in place and allocates nothing but the returned token.
 */
public final class Sampler implements TokenSampler {
    private final SamplingParams params;
    private final SplittableRandom random;
    private double[] probabilities = new double[0];
    private long[] order = new long[0];
    /** The adjusted logits; used only when the parameters adjust them. */
    private float[] adjusted = new float[0];
    /** How often each token id was generated so far; allocated only when a penalty needs it. */
    private int[] counts = new int[0];
    /** The prompt's token ids, which the repetition penalty counts as seen. */
    private final int[] promptIds;
    /** Whether each token id is in the prompt or was generated; allocated only when the repetition penalty needs it. */
    private boolean[] seen = new boolean[0];

    /** A sampler for one request whose prompt the repetition penalty does not see (a request without one). */
    public Sampler(SamplingParams params) {
        this(params, new int[0]);
    }

    /** A sampler for one request with the prompt {@code promptIds}, which the repetition penalty counts as seen. */
    public Sampler(SamplingParams params, int[] promptIds) {
        this.params = params;
        this.random = new SplittableRandom(params.seed());
        this.promptIds = params.repetitionPenalty() != 1 ? promptIds.clone() : new int[0];
    }

    /** The next token's id for these logits (one value per vocabulary entry): {@link #next(float[])}'s id. */
    public int sample(float[] logits) {
        return next(logits).id();
    }

    @Override
    public SampledToken next(float[] logits) {
        if (logits.length == 0) {
            throw new IllegalArgumentException("cannot sample from empty logits");
        }
        float[] scores = params.adjustsLogits() ? adjust(logits) : logits;
        int id = choose(scores);
        if (params.presencePenalty() != 0 || params.frequencyPenalty() != 0) {
            counts[id]++;
        }
        if (params.repetitionPenalty() != 1) {
            seen[id] = true;
        }
        return params.wantsLogprobs() ? withLogprobs(id, scores, params.topLogprobs()) : SampledToken.of(id);
    }

    private int choose(float[] scores) {
        if (params.isGreedy()) {
            return argmax(scores);
        }
        double[] p = softmax(scores, params.temperature());
        double draw = random.nextDouble();
        if (params.minP() > 0) {
            dropBelowMinP(p, params.minP());
        }
        if (params.topP() >= 1 && !params.filtersByRank()) {
            return pick(p, draw);
        }
        return pickFromTop(p, params.topK() > 0 ? params.topK() : p.length, params.topP(), params.filtersByRank(), draw);
    }

    /** Zeroes every probability below {@code minP} times the largest (vLLM's min-p; the largest always stays). */
    private static void dropBelowMinP(double[] p, double minP) {
        double max = 0;
        for (double v : p) {
            max = Math.max(max, v);
        }
        double threshold = minP * max;
        for (int i = 0; i < p.length; i++) {
            if (p[i] < threshold) {
                p[i] = 0;
            }
        }
    }

    /**
     * The logits with the bias added, the repetition penalty applied and the presence and frequency penalties
     * subtracted, in vLLM's order: {@code logit[t] += bias[t]}; for a token of the prompt or generated,
     * {@code logit[t] = logit[t] > 0 ? logit[t] / r : logit[t] · r}; {@code logit[t] −= count[t]·frequency +
     * (count[t] > 0 ? presence : 0)} (OpenAI's formula), in a buffer of this sampler.
     */
    float[] adjust(float[] logits) {
        if (adjusted.length != logits.length) {
            adjusted = new float[logits.length];
        }
        System.arraycopy(logits, 0, adjusted, 0, logits.length);
        for (Map.Entry<Integer, Float> bias : params.logitBias().entrySet()) {
            int id = bias.getKey();
            if (id >= logits.length) {
                throw new IllegalArgumentException("the logit bias names token " + id + ", outside the vocabulary [0, "
                        + logits.length + ")");
            }
            adjusted[id] += bias.getValue();
        }
        double repetition = params.repetitionPenalty();
        if (repetition != 1) {
            if (seen.length != logits.length) {
                seen = Arrays.copyOf(seen, logits.length);
                for (int id : promptIds) {
                    if (id >= 0 && id < seen.length) {
                        seen[id] = true;
                    }
                }
            }
            for (int t = 0; t < seen.length; t++) {
                if (seen[t]) {
                    float v = adjusted[t];
                    adjusted[t] = (float) (v > 0 ? v / repetition : v * repetition);
                }
            }
        }
        double presence = params.presencePenalty();
        double frequency = params.frequencyPenalty();
        if (presence != 0 || frequency != 0) {
            if (counts.length != logits.length) {
                counts = Arrays.copyOf(counts, logits.length);
            }
            for (int t = 0; t < counts.length; t++) {
                int c = counts[t];
                if (c > 0) {
                    adjusted[t] = (float) (adjusted[t] - c * frequency - presence);
                }
            }
        }
        return adjusted;
    }

    /** {@code id} with its log-softmax value over {@code scores} and the {@code top} largest ones, largest first, lower id first on ties. */
    static SampledToken withLogprobs(int id, float[] scores, int top) {
        double max = Double.NEGATIVE_INFINITY;
        for (float v : scores) {
            max = Math.max(max, v);
        }
        double sum = 0;
        for (float v : scores) {
            sum += Math.exp(v - max);
        }
        double logNormalizer = max + Math.log(sum);
        int k = Math.min(top, scores.length);
        int[] topIds = new int[k];
        float[] topLogprobs = new float[k];
        int filled = 0;
        for (int t = 0; t < scores.length; t++) {
            // insertion into the k best so far: strictly greater moves ahead, so equal values keep the lower id first
            int at = filled;
            while (at > 0 && scores[t] > scores[topIds[at - 1]]) {
                at--;
            }
            if (at >= k) {
                continue;
            }
            int last = Math.min(filled, k - 1);
            System.arraycopy(topIds, at, topIds, at + 1, last - at);
            topIds[at] = t;
            filled = Math.min(filled + 1, k);
        }
        for (int i = 0; i < k; i++) {
            topLogprobs[i] = (float) (scores[topIds[i]] - logNormalizer);
        }
        return new SampledToken(id, (float) (scores[id] - logNormalizer), topIds, topLogprobs);
    }

    /** The index of the largest value, the first one on ties. */
    public static int argmax(float[] values) {
        int best = 0;
        for (int i = 1; i < values.length; i++) {
            if (values[i] > values[best]) {
                best = i;
            }
        }
        return best;
    }

    private double[] softmax(float[] logits, double temperature) {
        if (probabilities.length != logits.length) {
            probabilities = new double[logits.length];
        }
        double max = Double.NEGATIVE_INFINITY;
        for (float v : logits) {
            max = Math.max(max, v);
        }
        double sum = 0;
        for (int i = 0; i < logits.length; i++) {
            double e = Math.exp((logits[i] - max) / temperature);
            probabilities[i] = e;
            sum += e;
        }
        for (int i = 0; i < logits.length; i++) {
            probabilities[i] /= sum;
        }
        return probabilities;
    }

    private static int pick(double[] p, double draw) {
        double cumulative = 0;
        for (int i = 0; i < p.length; i++) {
            cumulative += p[i];
            if (draw < cumulative) {
                return i;
            }
        }
        return lastNonZero(p);
    }

    /**
     * Sorts by probability (highest first, lower index first on ties), keeps the {@code k} most likely tokens with a
     * non-zero probability, then the top-p nucleus of their renormalized distribution, and draws within it.
     * {@code renormalize} is false when nothing was dropped before top-p, so the kept mass is taken as 1.
     */
    private int pickFromTop(double[] p, int k, double topP, boolean renormalize, double draw) {
        if (order.length != p.length) {
            order = new long[p.length];
        }
        for (int i = 0; i < p.length; i++) {
            // float bits of a non-negative value sort like the value; the low word breaks ties by index
            long key = (long) Float.floatToIntBits((float) p[i]) << 32 | (0xFFFFFFFFL - i);
            order[i] = key;
        }
        Arrays.sort(order);
        int candidates = 0;
        double total = 0;
        for (int j = order.length - 1; j >= 0 && candidates < k; j--) {
            double v = p[indexOf(order[j])];
            if (v <= 0 && candidates > 0) {
                break;
            }
            total += v;
            candidates++;
        }
        double reach = renormalize ? topP * total : topP;
        double mass = 0;
        int kept = 0;
        for (int j = order.length - 1; j >= order.length - candidates; j--) {
            mass += p[indexOf(order[j])];
            kept++;
            if (mass >= reach) {
                break;
            }
        }
        double target = draw * mass;
        double cumulative = 0;
        for (int j = order.length - 1; j >= order.length - kept; j--) {
            int index = indexOf(order[j]);
            cumulative += p[index];
            if (target < cumulative) {
                return index;
            }
        }
        return indexOf(order[order.length - kept]);
    }

    private static int indexOf(long key) {
        return (int) (0xFFFFFFFFL - (key & 0xFFFFFFFFL));
    }

    private static int lastNonZero(double[] p) {
        for (int i = p.length - 1; i > 0; i--) {
            if (p[i] > 0) {
                return i;
            }
        }
        return 0;
    }
}
