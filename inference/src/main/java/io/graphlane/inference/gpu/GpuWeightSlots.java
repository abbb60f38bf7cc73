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
 * {@link WeightSlots} of one GPU: a {@link GpuParameter} expecting F32 of the checkpoint shape (the GPU
 * parameter backend widens F16/BF16 on the device), seen as a borrowed {@link GpuMatrix} over the bound
 * weight's device memory, which only {@link #close} frees.
 */
final class GpuWeightSlots implements WeightSlots<GpuParameter, GpuMatrix> {

    @Override
    public GpuParameter slot(Expected tensor) {
        return new GpuParameter(tensor.name(), new TensorSpec(DType.F32, Shape.of(tensor.checkpointShape())));
    }

    @Override
    public GpuMatrix tensor(GpuParameter slot, Expected tensor) {
        GpuWeight weight = slot.weight().orElseThrow(() -> new IllegalStateException("parameter " + slot.name() + " has no bound weight"));
        return GpuMatrix.borrowed(weight.storage(), tensor.rows(), tensor.cols());
    }

    @Override
    public void close(GpuParameter slot) {
        slot.weight().ifPresent(GpuWeight::close);
    }
}
