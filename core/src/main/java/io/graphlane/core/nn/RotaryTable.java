package io.graphlane.core.nn;

import java.util.Arrays;

/**
 * The rotary frequencies one forward pass applies, computed on the host from a model's configuration:
 * the first {@code rotaryDim} features of each head rotate in the rotate-half layout (the pair
 * {@code (i, i + rotaryDim/2)} turns by {@code position · inverseFrequencies[i]}), the rest pass through
 * unchanged; the cosine and sine are multiplied by {@code attentionScaling} (YaRN's and LongRoPE's
 * attention factor; 1 otherwise). The CPU op and the GPU kernel consume the same table.
 *
 * @param rotaryDim          features of a head that rotate (even, at most the head width)
 * @param inverseFrequencies one frequency per rotating pair, {@code rotaryDim / 2} of them
 * @param attentionScaling   the factor on cos and sin
 */
public record RotaryTable(int rotaryDim, double[] inverseFrequencies, double attentionScaling) {

    /** Checks that the frequencies fill the rotary width. */
    public RotaryTable {
        if (rotaryDim <= 0 || rotaryDim % 2 != 0) {
            throw new IllegalArgumentException("rotary width must be positive and even, found " + rotaryDim);
        }
        if (inverseFrequencies.length != rotaryDim / 2) {
            throw new IllegalArgumentException("rotary width " + rotaryDim + " needs " + rotaryDim / 2
                    + " inverse frequencies, found " + inverseFrequencies.length);
        }
        inverseFrequencies = inverseFrequencies.clone();
        if (!(attentionScaling > 0) || Double.isInfinite(attentionScaling)) {
            throw new IllegalArgumentException("rotary attention scaling must be positive and finite, found " + attentionScaling);
        }
    }

    /** Plain RoPE over the whole head: {@code theta^(-2i/headDim)}. */
    public static RotaryTable standard(int headDim, double theta) {
        double[] inv = new double[headDim / 2];
        for (int i = 0; i < inv.length; i++) {
            inv[i] = 1.0 / Math.pow(theta, (2.0 * i) / headDim);
        }
        return new RotaryTable(headDim, inv, 1.0);
    }

    /** A copy of the frequencies. */
    @Override
    public double[] inverseFrequencies() {
        return inverseFrequencies.clone();
    }

    /** Frequency {@code i}, without copying. */
    public double frequency(int i) {
        return inverseFrequencies[i];
    }

    /** The frequencies as F32, for a device kernel. */
    public float[] frequenciesF32() {
        float[] out = new float[inverseFrequencies.length];
        for (int i = 0; i < out.length; i++) {
            out[i] = (float) inverseFrequencies[i];
        }
        return out;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof RotaryTable t && t.rotaryDim == rotaryDim && t.attentionScaling == attentionScaling
                && Arrays.equals(t.inverseFrequencies, inverseFrequencies);
    }

    @Override
    public int hashCode() {
        return 31 * (31 * rotaryDim + Arrays.hashCode(inverseFrequencies)) + Double.hashCode(attentionScaling);
    }

    @Override
    public String toString() {
        return "RotaryTable[rotaryDim=" + rotaryDim + ", scaling=" + attentionScaling + ", inv=" + Arrays.toString(inverseFrequencies) + "]";
    }
}
