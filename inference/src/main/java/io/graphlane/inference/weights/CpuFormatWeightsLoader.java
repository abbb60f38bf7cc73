package io.graphlane.inference.weights;

import io.graphlane.backend.cpu.nn.CpuNeuralOps;
import io.graphlane.backend.cpu.nn.CpuTensor;
import io.graphlane.backend.cpu.nn.PackedMatrix;
import io.graphlane.checkpoint.CheckpointSource;
import io.graphlane.checkpoint.recipe.DerivedWeight;
import io.graphlane.core.GraphlaneException;
import io.graphlane.inference.llama.LlamaConfig;
import io.graphlane.inference.llama.LlamaTensors.Expected;
import io.graphlane.inference.llama.StageWeights;
import io.graphlane.inference.stage.StageSpec;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import java.util.Objects;

/**
 * Loads a stage's weights into CPU tensors on the calling thread, each in the form its {@link WeightPlan}
 * gives under a {@link WeightFormat}: the tensor's bytes (or its recipe's result) are copied into a buffer
 * of the tensor's own, its leases released before the next tensor is read. F32 becomes an ordinary tensor,
 * 16-bit and 8-bit weights a packed one; each is released once through {@link CpuNeuralOps#release}. A
 * stand-in for the materialization supervisor where a node or a test loads without one.
 */
public final class CpuFormatWeightsLoader implements StageWeightsLoader<CpuTensor> {
    private final CheckpointSource source;
    private final LlamaConfig config;
    private final CpuNeuralOps ops;
    private final WeightFormat format;

    /** A loader reading {@code source} for a model of {@code config}, holding weights in {@code format}. */
    public CpuFormatWeightsLoader(CheckpointSource source, LlamaConfig config, CpuNeuralOps ops, WeightFormat format) {
        this.source = Objects.requireNonNull(source, "source");
        this.config = Objects.requireNonNull(config, "config");
        this.ops = Objects.requireNonNull(ops, "ops");
        this.format = Objects.requireNonNull(format, "format");
    }

    @Override
    public StageWeights<CpuTensor> load(StageSpec stage) {
        return StageWeightsAssembly.assemble(config, stage, ops, this::load);
    }

    private CpuTensor load(Expected expected) {
        String name = expected.name();
        CheckpointTensors.requirePresent(source, List.of(expected));
        CheckpointTensors.requireShape(source, expected);
        WeightPlan plan;
        try {
            plan = WeightPlan.of(source, expected, format, true);
        } catch (RuntimeException e) {
            throw new GraphlaneException("checkpoint " + source.catalog().dir() + ": tensor " + name + " (--weights "
                    + format.optionValue() + "): " + e.getMessage(), e);
        }
        DerivedWeight weight = plan.recipe().orElseGet(() -> DerivedWeight.renamed(name, source, name));
        ByteBuffer bytes = weight.evaluateToBuffer().order(ByteOrder.LITTLE_ENDIAN);
        return switch (plan.realized().dtype()) {
            case F32 -> ops.fromBuffer(bytes.asFloatBuffer(), expected.rows(), expected.cols());
            case BF16 -> CpuTensor.ownPacked(PackedMatrix.of(PackedMatrix.Encoding.BF16, bytes, expected.rows(), expected.cols()));
            case F16 -> CpuTensor.ownPacked(PackedMatrix.of(PackedMatrix.Encoding.F16, bytes, expected.rows(), expected.cols()));
            case I8 -> CpuTensor.ownPacked(PackedMatrix.of(PackedMatrix.Encoding.Q8_0, bytes, expected.rows(), expected.cols()));
            case U8 -> CpuTensor.ownPacked(PackedMatrix.of(PackedMatrix.Encoding.Q4_K, bytes, expected.rows(), expected.cols()));
            default -> throw new GraphlaneException("checkpoint " + source.catalog().dir() + ": tensor " + name + " is "
                    + plan.realized().dtype() + "; the model reads F32, F16 or BF16 weights");
        };
    }
}
