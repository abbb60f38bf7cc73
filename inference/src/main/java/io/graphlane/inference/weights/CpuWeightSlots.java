package io.graphlane.inference.weights;

import io.graphlane.backend.cpu.nn.CpuTensor;
import io.graphlane.backend.cpu.param.CpuParameter;
import io.graphlane.core.tensor.DType;
import io.graphlane.core.tensor.Shape;
import io.graphlane.core.tensor.TensorSpec;
import io.graphlane.inference.llama.LlamaTensors.Expected;
import java.util.Objects;
import java.util.function.Function;

/**
 * {@link WeightSlots} of the CPU backend: a {@link CpuParameter} of F32 and the checkpoint shape per
 * tensor (the CPU parameter backend uses aligned F32 in place and widens F16/BF16), wrapped as a
 * {@link CpuTensor} without a copy.
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
    public CpuTensor tensor(CpuParameter slot, Expected tensor) {
        return CpuTensor.wrap(slot.weight().floats(), tensor.rows(), tensor.cols());
    }

    @Override
    public void close(CpuParameter slot) {
        slot.close();
    }
}
