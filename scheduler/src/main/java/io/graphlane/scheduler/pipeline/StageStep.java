package io.graphlane.scheduler.pipeline;

import java.util.List;
import java.util.Objects;

/**
 * One stage's planned work for one micro-batch and the output it will fill. Most stages are one
 * submission on the stage's only lane ({@link #StageStep(Object, Object)}); a stage over several lanes
 * (the shards of a tensor-parallel stage) is several {@link Submission}s, each on one of the stage's
 * lanes and ordered after earlier submissions of the same step by their index.
 *
 * <p>How the engine orders and holds them: a submission that names no earlier submission in
 * {@code after} (an <em>entry</em>) orders after every <em>exit</em> of the previous stage (a
 * submission no other of its stage names) and is the only kind that may read the previous stage's
 * output; the next stage's entries order after every exit of this one, so the stage's hand-off covers
 * all of its lanes. Every submission of the step holds the step's output until its exact completion;
 * a step of the last stage ends when every exit of it has finished.
 *
 * @param submissions in an order where each names only earlier ones in {@code after}; at least one
 * @param output      what the stage's work fills, read by the next stage (or the engine)
 */
public record StageStep<W, A>(List<Submission<W>> submissions, A output) {

    /**
     * One submission of a stage step.
     *
     * @param lane   the stage lane it runs on, an index into the stage's lanes (0 on a single-lane stage)
     * @param work   the backend-native work
     * @param after  indices of earlier submissions of the same step it orders after
     * @param retain values the lane keeps until this submission's exact completion and then releases once
     *               (closing each {@link AutoCloseable}); once {@code plan} returned, the engine owns them and
     *               releases each itself if the submission is never sent
     */
    public record Submission<W>(int lane, W work, List<Integer> after, List<Object> retain) {
        public Submission {
            Objects.requireNonNull(work, "work");
            if (lane < 0) {
                throw new IllegalArgumentException("a submission's lane index must be >= 0, got " + lane);
            }
            after = List.copyOf(after);
            retain = List.copyOf(retain);
        }

        /** Work on stage lane {@code lane} after the submissions at {@code after}, retaining nothing. */
        public Submission(int lane, W work, List<Integer> after) {
            this(lane, work, after, List.of());
        }
    }

    public StageStep {
        Objects.requireNonNull(output, "output");
        submissions = List.copyOf(submissions);
        if (submissions.isEmpty()) {
            throw new IllegalArgumentException("a stage step needs at least one submission");
        }
        for (int i = 0; i < submissions.size(); i++) {
            for (int j : submissions.get(i).after()) {
                if (j < 0 || j >= i) {
                    throw new IllegalArgumentException("submission " + i + " of a stage step orders after " + j
                            + ": a submission orders only after earlier ones (0 to " + (i - 1) + ")");
                }
            }
        }
    }

    /** A single-lane step: {@code work} on the stage's lane. */
    public StageStep(W work, A output) {
        this(List.of(new Submission<>(0, work, List.of())), output);
    }

    /** The work of a single-submission step. */
    public W work() {
        if (submissions.size() != 1) {
            throw new IllegalStateException("a step of " + submissions.size() + " submissions has no single work; read submissions()");
        }
        return submissions.get(0).work();
    }

    /** Whether submission {@code index} orders after no other of this step, so it follows the previous stage. */
    public boolean isEntry(int index) {
        return submissions.get(index).after().isEmpty();
    }
}
