package io.graphlane.inference.tensorparallel;

import io.graphlane.backend.cpu.CpuBackend;
import io.graphlane.backend.cpu.CpuCompletion;
import io.graphlane.backend.cpu.CpuExecutor;
import io.graphlane.backend.cpu.nn.CpuNeuralOps;
import io.graphlane.backend.cpu.nn.CpuTensor;
import io.graphlane.core.completion.Outcome;
import io.graphlane.core.nn.NeuralOps;
import io.graphlane.inference.llama.StageForward;
import io.graphlane.inference.llama.StageInput;
import io.graphlane.inference.llama.StageOutput;
import java.util.ArrayList;
import java.util.List;

/**
 * A pipeline stage split over T shard lanes. Its {@link #forward} runs as the stage lane's work:
 * it submits one shard step to each shard lane (rank 0 reads the stage input), the shards meet in
 * their collectives on their own lane workers, and the stage lane waits on its worker (the device
 * side) for the exact completions of the T submissions, so the stage step's completion covers all
 * of them. A failed shard fails the step; the others, told by the group, fail instead of waiting.
 */
public final class TensorParallelStage implements StageForward<CpuTensor> {
    private final CpuBackend backend;
    private final List<CpuExecutor> shardLanes;
    private final List<LlamaShard<CpuTensor>> shards;
    private final NeuralOps<CpuTensor> outputOps = new CpuNeuralOps();

    /** A stage whose rank r runs {@code shards.get(r)} on {@code shardLanes.get(r)}. */
    public TensorParallelStage(CpuBackend backend, List<CpuExecutor> shardLanes, List<LlamaShard<CpuTensor>> shards) {
        if (shardLanes.size() != shards.size()) {
            throw new IllegalArgumentException(shards.size() + " shards need as many lanes, got " + shardLanes.size());
        }
        this.backend = backend;
        this.shardLanes = List.copyOf(shardLanes);
        this.shards = List.copyOf(shards);
    }

    /** The shards in rank order. */
    public List<LlamaShard<CpuTensor>> shards() {
        return shards;
    }

    @Override
    public StageOutput<CpuTensor> forward(StageInput<CpuTensor> input) {
        List<CpuCompletion> steps = new ArrayList<>(shards.size());
        StageOutput<CpuTensor>[] rankZero = newOutputHolder();
        for (int r = 0; r < shards.size(); r++) {
            LlamaShard<CpuTensor> shard = shards.get(r);
            StageInput<CpuTensor> own = r == 0 ? input : null;
            boolean first = r == 0;
            steps.add(backend.submit(shardLanes.get(r), () -> {
                StageOutput<CpuTensor> out = shard.forward(input.segments(), own);
                if (first) {
                    rankZero[0] = out;
                }
            }));
        }
        Throwable failure = null;
        for (CpuCompletion step : steps) {
            if (step.awaitUninterruptibly() instanceof Outcome.Failed failed && failure == null) {
                failure = failed.cause();
            }
        }
        if (failure != null) {
            if (rankZero[0] != null) {
                outputOps.release(rankZero[0].tensor());
            }
            throw failure instanceof RuntimeException r ? r : new IllegalStateException("tensor-parallel shard step failed", failure);
        }
        return rankZero[0];
    }

    @Override
    public NeuralOps<CpuTensor> ops() {
        return outputOps;
    }

    @Override
    public boolean endRequest(long requestId) {
        boolean any = false;
        for (LlamaShard<CpuTensor> shard : shards) {
            any |= shard.endRequest(requestId);
        }
        return any;
    }

    /** Every shard holds the same positions (a slice of each one's features): rank 0's count is the stage's. */
    @Override
    public long kvCachePositions() {
        return shards.get(0).kvCachePositions();
    }

    @Override
    public boolean rewind(long requestId, int position) {
        boolean any = false;
        for (LlamaShard<CpuTensor> shard : shards) {
            any |= shard.rewind(requestId, position);
        }
        return any;
    }

    /** Frees the shards' KV caches and weights, and stops the shard lanes; call once no work runs on them. */
    @Override
    public void close() {
        for (LlamaShard<CpuTensor> shard : shards) {
            shard.close();
            ShardedWeightsLoader.release(shard.weights(), shard.ops());
        }
        shardLanes.forEach(backend::shutdownExecutor);
    }

    @SuppressWarnings("unchecked")
    private static StageOutput<CpuTensor>[] newOutputHolder() {
        return (StageOutput<CpuTensor>[]) new StageOutput[1];
    }
}
