package io.graphlane.inference.weights;

import io.graphlane.checkpoint.CheckpointSource;
import io.graphlane.checkpoint.recipe.DerivedWeight;
import io.graphlane.checkpoint.recipe.Recipe;
import io.graphlane.core.GraphlaneException;
import io.graphlane.core.nn.NeuralOps;
import io.graphlane.core.param.EncodedLease;
import io.graphlane.core.tensor.DType;
import io.graphlane.inference.llama.LlamaConfig;
import io.graphlane.inference.llama.LlamaTensors;
import io.graphlane.inference.llama.LlamaTensors.Expected;
import io.graphlane.inference.llama.StageWeights;
import io.graphlane.inference.stage.StageSpec;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;

/**
 * Loads a stage's weights from a checkpoint on the calling thread: for each tensor it leases the
 * encoded bytes, derives F32 through the checkpoint module's recipe (a cast for F16/BF16, the
 * bytes as they are for F32), uploads them, and releases the leases. A stand-in for the
 * materialization supervisor: the model code sees only {@link StageWeightsLoader}.
 *
 * @param <T> the backend tensor
 */
public final class CheckpointWeightsLoader<T> implements StageWeightsLoader<T> {
    private final CheckpointSource source;
    private final LlamaConfig config;
    private final NeuralOps<T> ops;
    private final TensorUpload<T> upload;

    /** A loader reading {@code source} for a model of {@code config}. */
    public CheckpointWeightsLoader(CheckpointSource source, LlamaConfig config, NeuralOps<T> ops, TensorUpload<T> upload) {
        this.source = source;
        this.config = config;
        this.ops = ops;
        this.upload = upload;
    }

    @Override
    public StageWeights<T> load(StageSpec stage) {
        return StageWeightsAssembly.assemble(config, stage, ops, this::load);
    }

    private T load(Expected expected) {
        String name = expected.name();
        CheckpointTensors.requirePresent(source, List.of(expected));
        CheckpointTensors.requireShape(source, expected);
        Recipe recipe = LlamaTensors.recipe(source, expected);
        DType dtype = recipe.spec().dtype();
        if (dtype != DType.F32) {
            if (dtype != DType.BF16 && dtype != DType.F16) {
                throw new GraphlaneException("checkpoint " + source.catalog().dir() + ": tensor " + name + " is " + dtype
                        + "; the model reads F32, F16 or BF16 weights");
            }
            recipe = recipe.cast(DType.F32);
        }
        DerivedWeight weight = DerivedWeight.of(name, recipe);
        List<EncodedLease> leases = weight.acquireSources();
        try {
            ByteBuffer f32;
            if (dtype == DType.F32 && !expected.isFused()) {
                f32 = leases.get(0).bytes();
            } else {
                f32 = ByteBuffer.allocateDirect(Math.toIntExact(weight.output().byteSize())).order(ByteOrder.LITTLE_ENDIAN);
                weight.evaluate(leases, f32);
                f32.flip();
            }
            return upload.upload(f32.order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer(), expected.rows(), expected.cols());
        } finally {
            for (EncodedLease lease : leases) {
                lease.release();
            }
        }
    }
}
