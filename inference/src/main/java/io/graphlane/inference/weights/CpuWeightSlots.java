package io.graphlane.inference.weights;

import io.graphlane.backend.cpu.nn.CpuTensor;
import io.graphlane.backend.cpu.nn.PackedMatrix;
import io.graphlane.backend.cpu.param.CpuParameter;
import io.graphlane.backend.cpu.param.CpuWeight;
import io.graphlane.core.tensor.DType;
import io.graphlane.core.tensor.Shape;
import io.graphlane.core.tensor.TensorSpec;
import io.graphlane.inference.llama.LlamaTensors.Expected;
import java.util.Objects;
import java.util.function.Function;

/**
 * {@link WeightSlots} of the CPU backend: a {@link CpuParameter} per tensor of the spec its
 * {@link WeightPlan} realizes (F32, F16/BF16 of the checkpoint shape used in place where aligned, or
 * 8-bit blocks), wrapped without a copy as a {@link CpuTensor}: F32 as a plain tensor, the others as a
 * {@link PackedMatrix} the projection and embedding kernels widen as they read.
 */
public final class CpuWeightSlots implements WeightSlots<CpuParameter, CpuTensor> {
    private final Function<Expected, CpuParameter> slots;

    /** The slots the pipeline uses. */
    public CpuWeightSlots() {
        this(e -> new CpuParameter(e.name(), new TensorSpec(DType.F32, Shape.of(e.checkpointShape()))));
    }

    /** Slots made by {@code slots} (tests watch them). */
    CpuWeightSlots(Function<Expected, CpuParameter> slots) {
        this.slots = Objects.requireNonNull(slots, "slots");
    }

    @Override
    public CpuParameter slot(Expected tensor) {
        return slots.apply(tensor);
    }

    @Override
    public CpuParameter slot(Expected tensor, TensorSpec realized) {
        if (realized.dtype() == DType.F32) {
            return slot(tensor);
        }
        return new CpuParameter(tensor.name(), realized);
    }

    @Override
    public boolean holdsNarrowWeights() {
        return true;
    }

    @Override
    public CpuTensor tensor(CpuParameter slot, Expected tensor) {
        CpuWeight weight = slot.weight();
        return switch (weight.spec().dtype()) {
            case F32 -> CpuTensor.wrap(weight.floats(), tensor.rows(), tensor.cols());
            case BF16 -> CpuTensor.wrapPacked(PackedMatrix.of(PackedMatrix.Encoding.BF16, weight.bytes(), tensor.rows(), tensor.cols()));
            case F16 -> CpuTensor.wrapPacked(PackedMatrix.of(PackedMatrix.Encoding.F16, weight.bytes(), tensor.rows(), tensor.cols()));
            case I8 -> CpuTensor.wrapPacked(PackedMatrix.of(PackedMatrix.Encoding.Q8_0, weight.bytes(), tensor.rows(), tensor.cols()));
            case U8 -> CpuTensor.wrapPacked(PackedMatrix.of(PackedMatrix.Encoding.Q4_K, weight.bytes(), tensor.rows(), tensor.cols()));
            default -> throw new IllegalStateException("weight " + weight.name() + " is " + weight.spec()
                    + ": the CPU holds weights as F32, F16, BF16 or 8-bit blocks");
        };
    }

    @Override
    public void close(CpuParameter slot) {
        slot.close();
    }
}
