package io.graphlane.inference.llama;

import java.util.List;
import java.util.Objects;

/**
 * The sparse block of one mixture-of-experts layer: the router and the experts this holder has. A whole stage holds
 * every expert; an expert-parallel lane holds only its share, the others are {@code null} there.
 *
 * @param layer   the decoder layer (the model's index, from 0)
 * @param router  {@code experts × hidden} (the block's {@code gate.weight})
 * @param experts one entry per expert of the layer, by expert index; {@code null} for an expert held elsewhere
 * @param <T>     the backend tensor
 */
public record MoeWeights<T>(int layer, T router, List<ExpertWeights<T>> experts) {
    /** Checks that the router is present and copies the expert list (which may hold nulls). */
    public MoeWeights {
        Objects.requireNonNull(router, "router");
        experts = java.util.Collections.unmodifiableList(new java.util.ArrayList<>(experts));
    }

    /** The number of experts of the layer (held here or not). */
    public int expertCount() {
        return experts.size();
    }
}
