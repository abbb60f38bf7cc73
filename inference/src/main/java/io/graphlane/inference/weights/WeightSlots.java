package io.graphlane.inference.weights;

import io.graphlane.inference.llama.LlamaTensors.Expected;

/**
 * How a backend's parameter slots hold a model's weights, for {@link SupervisedWeightsLoader}: the
 * slot the materialization supervisor binds each expected tensor to, the backend tensor over a bound
 * slot (no copy), and the closing of what a slot holds.
 *
 * @param <P> the backend's parameter slot
 * @param <T> the backend tensor
 */
public interface WeightSlots<P, T> {

    /** A new, unbound slot that accepts {@code tensor} as F32 of its checkpoint shape on this backend. */
    P slot(Expected tensor);

    /**
     * The {@code tensor.rows() × tensor.cols()} tensor over the weight bound to {@code slot}, sharing its
     * storage; valid until {@link #close} of that slot, and never released through the neural ops.
     *
     * @throws IllegalStateException if nothing is bound to {@code slot}
     */
    T tensor(P slot, Expected tensor);

    /** Closes the weight bound to {@code slot}, if any; a second call does nothing. */
    void close(P slot);
}
