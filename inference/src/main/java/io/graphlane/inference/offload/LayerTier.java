package io.graphlane.inference.offload;

import io.graphlane.core.completion.Completion;
import io.graphlane.inference.llama.LayerWeights;

/**
 * How one backend moves a decoder layer's weights from host memory to its device: through its
 * {@code TransferBackend}, one promotion per tensor on the lane it is given, the copies chained so that the last
 * one's completion covers them all (and fails if any failed).
 *
 * @param <T> the backend tensor
 * @param <E> the executor (a transfer lane)
 * @param <C> the completion
 */
public interface LayerTier<T, E, C extends Completion> {

    /** One layer's promotion in flight: the device copy (usable once {@code completion} succeeded) and how to free it. */
    record Promotion<T, C>(LayerWeights<T> device, C completion, Runnable free) {
    }

    /** The bytes {@code tensor} takes on the device. */
    long bytes(T tensor);

    /** The bytes a promotion of {@code layer} moves. */
    long bytes(LayerWeights<T> layer);

    /**
     * Starts promoting {@code host} (the layer named {@code name}) on {@code lane}, after whatever the lane was told to
     * order after; returns at once.
     */
    Promotion<T, C> promote(E lane, String name, LayerWeights<T> host);
}
