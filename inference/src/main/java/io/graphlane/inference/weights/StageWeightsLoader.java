package io.graphlane.inference.weights;

import io.graphlane.inference.llama.StageWeights;
import io.graphlane.inference.stage.StageSpec;

/**
 * Produces the weights of one pipeline stage as backend tensors, all of them or none: a
 * loader that fails part-way releases what it made and reports the tensor at fault.
 *
 * @param <T> the backend tensor
 */
public interface StageWeightsLoader<T> {

    /** Every weight {@code stage} reads, shape-checked against the model's configuration. */
    StageWeights<T> load(StageSpec stage);
}
