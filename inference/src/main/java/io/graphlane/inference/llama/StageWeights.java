package io.graphlane.inference.llama;

import io.graphlane.inference.stage.StageSpec;
import java.util.List;
import java.util.Objects;

/**
 * Everything one pipeline stage reads: the embedding (stage 0 only), its decoder layers, and the
 * final norm and head (last stage only; the head is the embedding matrix when the model ties them).
 *
 * @param <T> the backend tensor
 * @param stage     the stage these weights serve
 * @param embedding {@code vocab × hidden}, present on the first stage, {@code null} elsewhere
 * @param layers    one entry per layer of {@code stage.layers()}, in order
 * @param finalNorm {@code 1 × hidden}, present on the last stage, {@code null} elsewhere
 * @param lmHead    {@code vocab × hidden}, present on the last stage, {@code null} elsewhere
 */
public record StageWeights<T>(StageSpec stage, T embedding, List<LayerWeights<T>> layers, T finalNorm, T lmHead) {

    /** Checks that the stage's role and the weights present agree. */
    public StageWeights {
        Objects.requireNonNull(stage, "stage");
        layers = List.copyOf(layers);
        if (layers.size() != stage.layers().size()) {
            throw new IllegalArgumentException(stage + " needs " + stage.layers().size() + " layers of weights, got " + layers.size());
        }
        if (stage.isFirst() != (embedding != null)) {
            throw new IllegalArgumentException(stage + (stage.isFirst() ? " needs" : " must not hold") + " the embedding");
        }
        if (stage.isLast() != (finalNorm != null) || stage.isLast() != (lmHead != null)) {
            throw new IllegalArgumentException(stage + (stage.isLast() ? " needs" : " must not hold") + " the final norm and the head");
        }
    }
}
