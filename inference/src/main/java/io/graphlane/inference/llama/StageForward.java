package io.graphlane.inference.llama;

import io.graphlane.core.nn.NeuralOps;

/**
 * What a pipeline stage runs for one step, whatever its inside: one lane ({@link LlamaStage}) or
 * several lanes holding tensor-parallel shards. Called only by work on the stage's lane.
 *
 * @param <T> the backend tensor
 */
public interface StageForward<T> extends AutoCloseable {

    /** Runs the stage over one micro-batch; see {@link LlamaStage#forward}. The output belongs to the caller. */
    StageOutput<T> forward(StageInput<T> input);

    /** Operations that can read and free the stage's outputs. */
    NeuralOps<T> ops();

    /** Frees the per-request state of {@code requestId}; false if the stage holds none. */
    boolean endRequest(long requestId);

    /** Forgets what the stage holds for {@code requestId} from {@code position} on, so a failed step can run again; false if it holds nothing. */
    boolean rewind(long requestId, int position);

    /** Positions the stage holds in its KV caches now, over every request; safe to read from any thread (0 if it keeps none). */
    default long kvCachePositions() {
        return 0;
    }

    /**
     * The bytes one position of one request takes in the stage's KV caches (over every shard of a split stage), as they
     * are allocated; 0 if it keeps none.
     */
    default long kvBytesPerPosition() {
        return 0;
    }

    /** Frees every per-request state; called once no work runs on the stage any more. */
    @Override
    void close();
}
