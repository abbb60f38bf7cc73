package io.graphlane.cli.sim;

import io.graphlane.scheduler.pipeline.MicroBatch;
import io.graphlane.scheduler.pipeline.SampledToken;
import io.graphlane.scheduler.pipeline.StageProgram;
import io.graphlane.scheduler.pipeline.StageStep;
import io.graphlane.testkit.sim.SimWork;
import java.time.Duration;

/**
 * A pipeline of {@code stages} stages on the simulated device: every stage step lasts
 * {@code stepTime} plus {@code perPosition} for each position it computes, and the last stage
 * "samples" a placeholder token derived from the request's input (no model is computed).
 * Used to measure the scheduler's pipelining apart from any arithmetic.
 */
public final class SimStageProgram implements StageProgram<SimWork, Object> {
    private static final Object OUTPUT = new Object();

    private final int stages;
    private final Duration stepTime;
    private final Duration perPosition;
    private final int vocab;

    public SimStageProgram(int stages, Duration stepTime, Duration perPosition, int vocab) {
        if (stages < 1) {
            throw new IllegalArgumentException("--stages must be >= 1, got " + stages);
        }
        this.stages = stages;
        this.stepTime = stepTime;
        this.perPosition = perPosition;
        this.vocab = vocab;
    }

    @Override
    public int stageCount() {
        return stages;
    }

    @Override
    public StageStep<SimWork, Object> plan(int stage, MicroBatch batch, Object input) {
        Duration d = stepTime.plus(perPosition.multipliedBy(batch.positionCount()));
        return new StageStep<>(SimWork.lasting(d), OUTPUT);
    }

    @Override
    public SampledToken[] sampledTokens(MicroBatch batch, Object lastOutput) {
        SampledToken[] tokens = new SampledToken[batch.entries().size()];
        for (int i = 0; i < tokens.length; i++) {
            MicroBatch.Entry e = batch.entries().get(i);
            int last = e.tokens()[e.tokens().length - 1];
            tokens[i] = SampledToken.of(Math.floorMod(last * 1_103_515_245 + e.startPosition() + 12_345, vocab));
        }
        return tokens;
    }

    @Override
    public void release(Object output) {
        // Simulated outputs hold no storage.
    }

    @Override
    public void forget(long requestId) {
        // No per-request state.
    }

    @Override
    public void rewind(long requestId, int position) {
        // No per-request state.
    }
}
