package io.graphlane.scheduler.pipeline;

import java.util.List;

/**
 * What each pipeline stage computes for one micro-batch step, as backend-native work. The
 * engine plans every stage of a step at once (each stage reading the previous stage's output)
 * and sends the work to the stage lanes, which order each stage after the one before on the
 * device side. Implementations keep per-request state (KV caches) per stage; a request has
 * at most one step in flight, and its steps on one stage run in order (on each of the stage's lanes).
 * A stage runs on one lane, or on {@link #laneCount several} (the shards of a tensor-parallel stage):
 * then its step is several submissions with orders between them ({@link StageStep.Submission}).
 *
 * @param <W> backend-native work
 * @param <A> a stage's output: an activation, or on the last stage the sampled tokens
 */
public interface StageProgram<W, A> {

    /** The number of stages. */
    int stageCount();

    /** How many lanes stage {@code stage} runs on (1 unless the stage is split over several). */
    default int laneCount(int stage) {
        return 1;
    }

    /**
     * Plans stage {@code stage}'s work for {@code batch}: work that reads {@code input} (the previous
     * stage's output; null on stage 0) and fills the returned output. Called on the engine's thread;
     * must not run the work nor wait for anything.
     */
    StageStep<W, A> plan(int stage, MicroBatch batch, A input);

    /**
     * The token sampled for each entry of {@code batch}, in entry order, read from the last stage's
     * output after that stage's work completed successfully.
     */
    SampledToken[] sampledTokens(MicroBatch batch, A lastOutput);

    /** Frees an output once no work reads or writes it any more; called exactly once per output. */
    void release(A output);

    /**
     * Drops the per-request state of {@code requestId} on every stage; called once no work of it is in flight. A program
     * that frees it only by work on the stage lanes does so by the stage's next work there: its next step, or the work
     * of {@link #planChanges}, which the engine sends at once.
     */
    void forget(long requestId);

    /**
     * Takes back what a failed step added to {@code requestId}'s state on the stages that did run it
     * (positions from {@code position} on), so the step can run again; called once no work of the
     * request is in flight, before the request's next step is planned.
     */
    void rewind(long requestId, int position);

    /**
     * Work that applies, on stage {@code stage}'s lanes, every change to its request state asked for so far
     * ({@link #forget}, {@link #rewind}): one submission per lane whose state changes only by work on that lane, none
     * ordered after another, so that what ended requests held is freed now rather than by the stage's next step. The
     * engine sends it after requests ended and releases their KV-cache reservations once every such submission of every
     * stage has finished. Planned on the engine's thread; must not run anything. Empty (the default) for a program whose
     * {@link #forget} frees at once, or that keeps no per-request state.
     */
    default List<StageStep.Submission<W>> planChanges(int stage) {
        return List.of();
    }

    /**
     * The bytes one position of one request takes in the KV caches of every stage (and every shard of a stage) together,
     * as they are allocated: what admission reserves per position of a request ({@link KvBudget}). 0 (the default) for a
     * program that keeps no per-position state.
     */
    default long kvBytesPerPosition() {
        return 0;
    }
}
