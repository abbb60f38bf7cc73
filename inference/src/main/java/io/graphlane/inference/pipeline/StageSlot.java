package io.graphlane.inference.pipeline;

import io.graphlane.core.nn.NeuralOps;
import io.graphlane.inference.llama.StageOutput;

/**
 * What one stage's work of one step leaves for its reader: the activation (or logits) it
 * produced, and on the last stage the sampled tokens. Filled on the stage's lane by its work;
 * read only after that work's exact completion (the next stage orders after it; the engine
 * reads the tokens after the last stage's {@code Finished}).
 */
final class StageSlot<T> {
    private final NeuralOps<T> ops;
    private volatile StageOutput<T> output;
    private volatile int[] sampled;

    StageSlot(NeuralOps<T> ops) {
        this.ops = ops;
    }

    void fill(StageOutput<T> produced) {
        this.output = produced;
    }

    StageOutput<T> output() {
        StageOutput<T> o = output;
        if (o == null) {
            throw new IllegalStateException("stage output read before the work that fills it completed");
        }
        return o;
    }

    void sampled(int[] tokens) {
        this.sampled = tokens;
    }

    int[] sampled() {
        int[] s = sampled;
        if (s == null) {
            throw new IllegalStateException("sampled tokens read before the last stage's work completed");
        }
        return s;
    }

    /** Frees the produced tensor, if the work produced one. */
    void release() {
        StageOutput<T> o = output;
        output = null;
        if (o != null) {
            ops.release(o.tensor());
        }
    }
}
