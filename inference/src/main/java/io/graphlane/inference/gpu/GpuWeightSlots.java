package io.graphlane.inference.gpu;

import io.graphlane.backend.gpu.nn.GpuMatrix;
import io.graphlane.backend.gpu.param.GpuParameter;
import io.graphlane.backend.gpu.param.GpuWeight;
import io.graphlane.core.tensor.DType;
import io.graphlane.core.tensor.Shape;
import io.graphlane.core.tensor.TensorSpec;
import io.graphlane.inference.llama.LlamaTensors.Expected;
import io.graphlane.inference.weights.WeightSlots;

/**
 * {@link WeightSlots} of one GPU: a {@link GpuParameter} expecting the checkpoint shape in F32 or, where the parameter
 * backend holds 16-bit weights as stored ({@code sixteenBit}), in the {@link io.graphlane.inference.weights.WeightPlan}'s
 * BF16 or F16; seen as a borrowed {@link GpuMatrix} of that dtype over the bound weight's device memory, which only
 * {@link #close} frees.
 */
final class GpuWeightSlots implements WeightSlots<GpuParameter, GpuMatrix> {
    private final boolean sixteenBit;

    /** Slots of F32 weights only ({@code sixteenBit} false: 16-bit checkpoints are widened), or also of BF16/F16 ones. */
    GpuWeightSlots(boolean sixteenBit) {
        this.sixteenBit = sixteenBit;
    }

    @Override
    public GpuParameter slot(Expected tensor) {
        return new GpuParameter(tensor.name(), new TensorSpec(DType.F32, Shape.of(tensor.checkpointShape())));
    }

    @Override
    public GpuParameter slot(Expected tensor, TensorSpec realized) {
        if (!sixteenBit) {
            return WeightSlots.super.slot(tensor, realized);
        }
        DType d = realized.dtype();
        if ((d != DType.F32 && d != DType.BF16 && d != DType.F16) || !realized.shape().equals(Shape.of(tensor.checkpointShape()))) {
            throw new IllegalArgumentException("tensor " + tensor.name() + ": the GPU holds F32, BF16 or F16 weights of the checkpoint"
                    + " shape " + Shape.of(tensor.checkpointShape()) + ", not " + realized);
        }
        return new GpuParameter(tensor.name(), realized);
    }

    @Override
    public boolean holdsNarrowWeights() {
        return sixteenBit;
    }

    @Override
    public boolean holdsSixteenBitOnly() {
        return sixteenBit;
    }

    @Override
    public GpuMatrix tensor(GpuParameter slot, Expected tensor) {
        GpuWeight weight = slot.weight().orElseThrow(() -> new IllegalStateException("parameter " + slot.name() + " has no bound weight"));
        return GpuMatrix.borrowed(weight.storage(), tensor.rows(), tensor.cols(), weight.spec().dtype());
    }

    @Override
    public void close(GpuParameter slot) {
        slot.weight().ifPresent(GpuWeight::close);
    }
}
