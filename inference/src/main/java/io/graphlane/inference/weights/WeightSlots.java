package io.graphlane.inference.weights;

import io.graphlane.core.tensor.DType;
import io.graphlane.core.tensor.Shape;
import io.graphlane.core.tensor.TensorSpec;
import io.graphlane.inference.llama.LlamaTensors.Expected;

/**
 * How a backend's parameter slots hold a model's weights, for {@link SupervisedWeightsLoader}: the
 * slot the materialization supervisor binds each expected tensor to (F32, or on a backend that holds them,
 * the 16-bit and 8-bit forms of {@link WeightFormat}), the backend tensor over a bound slot (no copy),
 * and the closing of what a slot holds.
 *
 * @param <P> the backend's parameter slot
 * @param <T> the backend tensor
 */
public interface WeightSlots<P, T> {

    /** A new, unbound slot that accepts {@code tensor} as F32 of its checkpoint shape on this backend. */
    P slot(Expected tensor);

    /**
     * A new, unbound slot that accepts {@code tensor} realized as {@code realized} (a {@link WeightPlan}'s spec);
     * by default only F32 of the checkpoint shape, for a backend that holds F32 weights only.
     *
     * @throws IllegalArgumentException naming the tensor and the spec if this backend cannot hold it
     */
    default P slot(Expected tensor, TensorSpec realized) {
        if (realized.dtype() != DType.F32 || !realized.shape().equals(Shape.of(tensor.checkpointShape()))) {
            throw new IllegalArgumentException("tensor " + tensor.name() + ": this backend holds F32 weights only, not " + realized);
        }
        return slot(tensor);
    }

    /** True if {@link #slot(Expected, TensorSpec)} accepts 16-bit and 8-bit weights (the CPU), false if F32 only. */
    default boolean holdsNarrowWeights() {
        return false;
    }

    /**
     * True if {@link #slot(Expected, TensorSpec)} accepts F16 and BF16 matrices but no 8-bit blocks, and a 16-bit
     * matrix is held as stored whatever the host's SIMD (a GPU: cuBLAS multiplies 16-bit operands with F32
     * accumulation); implies {@link #holdsNarrowWeights}.
     */
    default boolean holdsSixteenBitOnly() {
        return false;
    }

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
