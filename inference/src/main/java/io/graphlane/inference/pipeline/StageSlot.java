package io.graphlane.inference.pipeline;

import io.graphlane.core.nn.HostCopy;
import io.graphlane.core.nn.NeuralOps;
import io.graphlane.inference.llama.StageOutput;
import io.graphlane.scheduler.pipeline.SampledToken;

/**
 * What one stage's work of one step leaves for its reader: the activation (or logits) it
 * produced, and on the last stage the sampled tokens, or (on a device, where the work only
 * enqueues) the logits' host copy to sample from. Filled on the stage's lane by its work;
 * read only after that work's exact completion (the next stage orders after it; the engine
 * reads the tokens after the last stage's {@code Finished}).
 */
final class StageSlot<T> {
    private final NeuralOps<T> ops;
    private volatile StageOutput<T> output;
    private volatile SampledToken[] sampled;
    private volatile HostCopy logits;

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

    void sampled(SampledToken[] tokens) {
        this.sampled = tokens;
    }

    /** The logits' host copy, readable once the last stage's work completed; the slot closes it on release. */
    void pendingLogits(HostCopy copy) {
        this.logits = copy;
    }

    /** The sampled tokens, or null when the work left a host copy of the logits to sample from instead. */
    SampledToken[] sampledOrNull() {
        return sampled;
    }

    /** The host copy the last stage's work left. */
    HostCopy logits() {
        HostCopy l = logits;
        if (l == null) {
            throw new IllegalStateException("sampled tokens read before the last stage's work completed");
        }
        return l;
    }

    /** Frees the produced tensor, if the work produced one, and the logits' host copy, if any. */
    void release() {
        StageOutput<T> o = output;
        output = null;
        HostCopy l = logits;
        logits = null;
        try {
            if (l != null) {
                l.close();
            }
        } finally {
            if (o != null) {
                ops.release(o.tensor());
            }
        }
    }
}
