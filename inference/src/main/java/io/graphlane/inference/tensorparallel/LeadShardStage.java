package io.graphlane.inference.tensorparallel;

import io.graphlane.core.nn.NeuralOps;
import io.graphlane.inference.llama.StageForward;
import io.graphlane.inference.llama.StageInput;
import io.graphlane.inference.llama.StageOutput;

/**
 * A tensor-parallel stage as its shard 0 sees it when the other shards run elsewhere (on other nodes): a step runs
 * shard 0 over the stage input, meeting the other shards in the stage's collectives, and returns the stage's output.
 * Whoever submits the step must have told the other shards to run the same step, in the same order
 * ({@link LlamaShard#forward} with no input); this class does not reach them itself.
 *
 * @param <T> the backend tensor
 */
public final class LeadShardStage<T> implements StageForward<T> {
    private final LlamaShard<T> shard;

    /** The stage led by {@code shard}, which must be rank 0 of its group. */
    public LeadShardStage(LlamaShard<T> shard) {
        if (shard.rank() != 0) {
            throw new IllegalArgumentException("a stage is led by its shard 0, not shard " + shard.rank());
        }
        this.shard = shard;
    }

    @Override
    public StageOutput<T> forward(StageInput<T> input) {
        return shard.forward(input.segments(), input);
    }

    @Override
    public NeuralOps<T> ops() {
        return shard.ops();
    }

    @Override
    public boolean endRequest(long requestId) {
        return shard.endRequest(requestId);
    }

    @Override
    public boolean rewind(long requestId, int position) {
        return shard.rewind(requestId, position);
    }

    /** Frees the shard's KV caches; its weights belong to whoever loaded them. */
    @Override
    public void close() {
        shard.close();
    }
}
