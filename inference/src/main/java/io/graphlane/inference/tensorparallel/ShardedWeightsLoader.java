package io.graphlane.inference.tensorparallel;

import io.graphlane.checkpoint.CheckpointSource;
import io.graphlane.checkpoint.recipe.DerivedWeight;
import io.graphlane.checkpoint.recipe.Recipe;
import io.graphlane.core.GraphlaneException;
import io.graphlane.core.nn.NeuralOps;
import io.graphlane.core.param.EncodedLease;
import io.graphlane.core.tensor.DType;
import io.graphlane.core.tensor.Shape;
import io.graphlane.core.topology.Range;
import io.graphlane.inference.llama.LayerWeights;
import io.graphlane.inference.llama.LlamaConfig;
import io.graphlane.inference.llama.LlamaTensors;
import io.graphlane.inference.llama.LlamaTensors.Expected;
import io.graphlane.inference.stage.StageSpec;
import io.graphlane.inference.weights.TensorUpload;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;

/**
 * Loads one rank's shard of a stage: each sharded tensor is a recipe whose range is pushed down to
 * the checkpoint selection ({@link DerivedWeight#shard}), so the rank leases only the bytes it owns;
 * every lease is released before the tensor is returned. All or nothing: on failure what was made is
 * released and the error names the tensor.
 *
 * @param <T> the backend tensor
 */
public final class ShardedWeightsLoader<T> {
    private final CheckpointSource source;
    private final LlamaConfig config;
    private final TensorParallelism tp;
    private final NeuralOps<T> ops;
    private final TensorUpload<T> upload;

    /** A loader of shards of {@code source} for {@code tp}, uploading through {@code upload}. */
    public ShardedWeightsLoader(CheckpointSource source, TensorParallelism tp, NeuralOps<T> ops, TensorUpload<T> upload) {
        this.source = source;
        this.config = tp.config();
        this.tp = tp;
        this.ops = ops;
        this.upload = upload;
    }

    /** Rank {@code rank}'s weights of {@code stage}. */
    public ShardWeights<T> load(StageSpec stage, int rank) {
        List<T> made = new ArrayList<>();
        try {
            T embedding = rank == 0 && stage.isFirst() ? keep(made, whole(LlamaTensors.EMBEDDING, config.vocabSize(), config.hiddenSize(), false)) : null;
            List<LayerWeights<T>> layers = new ArrayList<>();
            for (int l = stage.layers().start(); l < stage.layers().end(); l++) {
                layers.add(layer(l, rank, made));
            }
            T finalNorm = null;
            T head = null;
            if (rank == 0 && stage.isLast()) {
                finalNorm = keep(made, whole(LlamaTensors.FINAL_NORM, 1, config.hiddenSize(), true));
                if (config.tieWordEmbeddings() && embedding != null) {
                    head = embedding;
                } else {
                    head = keep(made, whole(config.tieWordEmbeddings() ? LlamaTensors.EMBEDDING : LlamaTensors.LM_HEAD,
                            config.vocabSize(), config.hiddenSize(), false));
                }
            }
            return new ShardWeights<>(stage, rank, embedding, layers, finalNorm, head);
        } catch (RuntimeException e) {
            made.forEach(ops::release);
            throw e;
        }
    }

    /** Frees every tensor of {@code weights} once. */
    public static <T> void release(ShardWeights<T> weights, NeuralOps<T> ops) {
        java.util.Set<T> distinct = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
        distinct.add(weights.embedding());
        distinct.add(weights.finalNorm());
        distinct.add(weights.lmHead());
        for (LayerWeights<T> l : weights.layers()) {
            distinct.addAll(java.util.Arrays.asList(l.attentionNorm(), l.wq(), l.wk(), l.wv(), l.wo(), l.bq(), l.bk(), l.bv(), l.bo(),
                    l.ffnNorm(), l.wGate(), l.wUp(), l.wDown()));
        }
        distinct.remove(null);
        distinct.forEach(ops::release);
    }

    private LayerWeights<T> layer(int l, int rank, List<T> made) {
        int hidden = config.hiddenSize();
        Range q = tp.queryFeatures(rank);
        Range kv = tp.kvFeatures(rank);
        Range mlp = tp.intermediateFeatures(rank);
        boolean bias = config.qkvBias();
        return new LayerWeights<>(
                keep(made, whole(LlamaTensors.layer(l, "input_layernorm.weight"), 1, hidden, true)),
                keep(made, shard(LlamaTensors.layer(l, "self_attn.q_proj.weight"), config.queryWidth(), hidden, false, 0, q)),
                keep(made, shard(LlamaTensors.layer(l, "self_attn.k_proj.weight"), config.kvWidth(), hidden, false, 0, kv)),
                keep(made, shard(LlamaTensors.layer(l, "self_attn.v_proj.weight"), config.kvWidth(), hidden, false, 0, kv)),
                keep(made, shard(LlamaTensors.layer(l, "self_attn.o_proj.weight"), hidden, config.queryWidth(), false, 1, q)),
                bias ? keep(made, shard(LlamaTensors.layer(l, "self_attn.q_proj.bias"), 1, config.queryWidth(), true, 0, q)) : null,
                bias ? keep(made, shard(LlamaTensors.layer(l, "self_attn.k_proj.bias"), 1, config.kvWidth(), true, 0, kv)) : null,
                bias ? keep(made, shard(LlamaTensors.layer(l, "self_attn.v_proj.bias"), 1, config.kvWidth(), true, 0, kv)) : null,
                config.outputBias() ? keep(made, whole(LlamaTensors.layer(l, "self_attn.o_proj.bias"), 1, hidden, true)) : null,
                keep(made, whole(LlamaTensors.layer(l, "post_attention_layernorm.weight"), 1, hidden, true)),
                keep(made, shard(LlamaTensors.layer(l, "mlp.gate_proj.weight"), config.intermediateSize(), hidden, false, 0, mlp)),
                keep(made, shard(LlamaTensors.layer(l, "mlp.up_proj.weight"), config.intermediateSize(), hidden, false, 0, mlp)),
                keep(made, shard(LlamaTensors.layer(l, "mlp.down_proj.weight"), hidden, config.intermediateSize(), false, 1, mlp)));
    }

    private T whole(String name, int rows, int cols, boolean vector) {
        return read(weight(new Expected(name, rows, cols, vector)), rows, cols);
    }

    /** The range {@code part} of axis {@code axis} (of the checkpoint's layout) of tensor {@code name}. */
    private T shard(String name, int rows, int cols, boolean vector, int axis, Range part) {
        DerivedWeight sharded = weight(new Expected(name, rows, cols, vector)).shard(axis, part.start(), part.end());
        int shardRows = vector ? 1 : (axis == 0 ? part.size() : rows);
        int shardCols = vector ? part.size() : (axis == 1 ? part.size() : cols);
        return read(sharded, shardRows, shardCols);
    }

    private DerivedWeight weight(Expected expected) {
        String name = expected.name();
        if (!source.catalog().contains(name)) {
            throw new GraphlaneException("checkpoint " + source.catalog().dir() + " has no tensor " + name
                    + " (expected shape " + Shape.of(expected.checkpointShape()) + ")");
        }
        Recipe recipe = Recipe.source(source, name);
        Shape found = recipe.spec().shape();
        if (!found.equals(Shape.of(expected.checkpointShape()))) {
            throw new GraphlaneException("checkpoint " + source.catalog().dir() + ": tensor " + name + " has shape " + found
                    + ", expected " + Shape.of(expected.checkpointShape()));
        }
        DType dtype = recipe.spec().dtype();
        if (dtype != DType.F32) {
            if (dtype != DType.BF16 && dtype != DType.F16) {
                throw new GraphlaneException("checkpoint " + source.catalog().dir() + ": tensor " + name + " is " + dtype
                        + "; the model reads F32, F16 or BF16 weights");
            }
            recipe = recipe.cast(DType.F32);
        }
        return DerivedWeight.of(name, recipe);
    }

    private T read(DerivedWeight weight, int rows, int cols) {
        List<EncodedLease> leases = weight.acquireSources();
        try {
            ByteBuffer f32 = ByteBuffer.allocateDirect(Math.toIntExact(weight.output().byteSize())).order(ByteOrder.LITTLE_ENDIAN);
            weight.evaluate(leases, f32);
            f32.flip();
            return upload.upload(f32.order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer(), rows, cols);
        } finally {
            for (EncodedLease lease : leases) {
                lease.release();
            }
        }
    }

    private static <T> T keep(List<T> made, T tensor) {
        made.add(tensor);
        return tensor;
    }
}
