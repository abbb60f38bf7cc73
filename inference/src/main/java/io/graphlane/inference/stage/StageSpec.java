package io.graphlane.inference.stage;

import io.graphlane.core.topology.Range;
import java.util.Objects;

/**
 * One pipeline stage: its index, the contiguous decoder layers it owns, and whether it is the
 * first (owns the embedding) or the last (owns the final norm and the head).
 *
 * @param index      the stage's position in the pipeline, from 0
 * @param stageCount stages in the pipeline
 * @param layers     the decoder layers {@code [start, end)} this stage runs
 */
public record StageSpec(int index, int stageCount, Range layers) {

    /** Checks that the index lies in the pipeline. */
    public StageSpec {
        Objects.requireNonNull(layers, "layers");
        if (stageCount <= 0 || index < 0 || index >= stageCount) {
            throw new IllegalArgumentException("stage index " + index + " is outside [0, " + stageCount + ")");
        }
    }

    /** True for stage 0, which turns token ids into the residual stream. */
    public boolean isFirst() {
        return index == 0;
    }

    /** True for the last stage, which ends with the final norm and the head. */
    public boolean isLast() {
        return index == stageCount - 1;
    }

    @Override
    public String toString() {
        return "stage " + index + "/" + stageCount + " layers " + layers;
    }
}
