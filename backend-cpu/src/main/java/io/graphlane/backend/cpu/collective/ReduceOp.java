package io.graphlane.backend.cpu.collective;

import java.nio.FloatBuffer;

/**
 * The element-wise reductions an all-reduce may name (NCCL's set). The CPU backend computes
 * {@link #SUM}, {@link #MIN} and {@link #MAX}; {@link #PRODUCT} and {@link #AVERAGE} are refused
 * with {@link io.graphlane.core.backend.AbsentCapabilityException} before anything is queued.
 */
public enum ReduceOp {
    /** Element-wise sum. */
    SUM,
    /** Element-wise product. */
    PRODUCT,
    /** Element-wise minimum. */
    MIN,
    /** Element-wise maximum. */
    MAX,
    /** Element-wise mean over the members. */
    AVERAGE;

    /** True when the CPU collectives compute this reduction. */
    public boolean supportedOnCpu() {
        return this == SUM || this == MIN || this == MAX;
    }

    /**
     * Writes {@code count} values of {@code mine} (from {@code mineAt}) folded with {@code incoming}
     * (from {@code incomingAt}) into {@code out} at {@code outAt}, element by element; {@code out} may
     * be {@code mine}. Streams through the two scratch arrays in blocks of their length, so the
     * arithmetic runs on arrays the compiler vectorizes and each buffer is read or written once.
     */
    void combine(FloatBuffer out, int outAt, FloatBuffer mine, int mineAt, FloatBuffer incoming, int incomingAt, int count,
                 float[] a, float[] b) {
        int block = Math.min(a.length, b.length);
        for (int done = 0; done < count; done += block) {
            int n = Math.min(block, count - done);
            mine.get(mineAt + done, a, 0, n);
            incoming.get(incomingAt + done, b, 0, n);
            combine(a, b, n);
            out.put(outAt + done, a, 0, n);
        }
    }

    /** Folds {@code count} values of {@code incoming} into {@code into}, element by element. */
    private void combine(float[] into, float[] incoming, int count) {
        switch (this) {
            case SUM -> {
                for (int i = 0; i < count; i++) {
                    into[i] += incoming[i];
                }
            }
            case MIN -> {
                for (int i = 0; i < count; i++) {
                    into[i] = Math.min(into[i], incoming[i]);
                }
            }
            case MAX -> {
                for (int i = 0; i < count; i++) {
                    into[i] = Math.max(into[i], incoming[i]);
                }
            }
            default -> throw new IllegalStateException("reduction " + this + " is not computed on the CPU");
        }
    }
}
