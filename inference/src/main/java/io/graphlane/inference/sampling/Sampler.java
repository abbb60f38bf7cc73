package io.graphlane.inference.sampling;

import java.util.Arrays;
import java.util.SplittableRandom;

/**
 * Chooses one request's tokens from logits, following its {@link SamplingParams}. The draws come
 * from a generator seeded once per request, so the same logits in the same order give the same
 * tokens on every run. One instance per request; not thread-safe.
 */
public final class Sampler {
    private final SamplingParams params;
    private final SplittableRandom random;
    private double[] probabilities = new double[0];
    private long[] order = new long[0];

    /** A sampler for one request. */
    public Sampler(SamplingParams params) {
        this.params = params;
        this.random = new SplittableRandom(params.seed());
    }

    /** The next token for these logits (one value per vocabulary entry). */
    public int sample(float[] logits) {
        if (logits.length == 0) {
            throw new IllegalArgumentException("cannot sample from empty logits");
        }
        if (params.isGreedy()) {
            return argmax(logits);
        }
        double[] p = softmax(logits, params.temperature());
        double draw = random.nextDouble();
        if (params.topP() >= 1) {
            return pick(p, draw);
        }
        return pickFromNucleus(p, params.topP(), draw);
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

    /** Sorts by probability (highest first, lower index first on ties), keeps the top-p nucleus, draws within it. */
    private int pickFromNucleus(double[] p, double topP, double draw) {
        if (order.length != p.length) {
            order = new long[p.length];
        }
        for (int i = 0; i < p.length; i++) {
            // float bits of a non-negative value sort like the value; the low word breaks ties by index
            long key = (long) Float.floatToIntBits((float) p[i]) << 32 | (0xFFFFFFFFL - i);
            order[i] = key;
        }
        Arrays.sort(order);
        double mass = 0;
        int kept = 0;
        for (int j = order.length - 1; j >= 0; j--) {
            mass += p[indexOf(order[j])];
            kept++;
            if (mass >= topP) {
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
