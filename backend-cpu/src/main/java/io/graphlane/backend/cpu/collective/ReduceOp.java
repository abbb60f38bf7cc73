package io.graphlane.backend.cpu.collective;

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

    /** Folds {@code count} values of {@code incoming} into {@code into}, element by element. */
    void combine(float[] into, float[] incoming, int count) {
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
