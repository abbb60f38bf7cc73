package io.graphlane.inference.tensorparallel;

import io.graphlane.actors.lane.Retained;
import io.graphlane.core.nn.NeuralOps;
import io.graphlane.inference.llama.Segment;
import io.graphlane.inference.llama.StageForward;
import io.graphlane.inference.llama.StageInput;
import io.graphlane.inference.llama.StageOutput;
import io.graphlane.scheduler.pipeline.StageStep;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * A pipeline stage split over T shard lanes inside one JVM, planned as lane works ordered by completion handles
 * ({@link #plan}): per rank r, with P = 2 × layers partial phases (each layer's attention, then its MLP),
 *
 * <pre>
 *   work (0, r):      begin (residual stream from the stage input), partial 0            after the previous stage
 *   work (p, r):      reduce partial p−1 of every rank into the residual, partial p      after work (p−1, r') for every r'
 *   work (P, r):      rank 0: reduce partial P−1, the stage output; every rank: commit    after work (P−1, r') for every r'
 * </pre>
 *
 * <p>A reduce reads the other ranks' partial buffers after their works' exact completions, so no work waits for
 * another rank (there are no collectives on this path); the works (P, r) are the stage's exits, so the next stage
 * orders after every rank. Every buffer of a step (each rank's residual stream, scratch and partials) is retained by
 * every work of the step and freed exactly once, when the last of them has completed, also when a work failed or was
 * never run. A rank's KV caches advance only when its last work runs, i.e. when every work of the step succeeded.
 *
 * <p>{@link #forward} runs the same works in plan order on the calling thread, for callers outside the pipeline
 * engine (the logits command, tests).
 *
 * @param <T> the backend tensor
 */
public final class TensorParallelStage<T> implements StageForward<T> {
    private final List<LlamaShard<T>> shards;
    private final Consumer<ShardWeights<T>> releaseWeights;
    /** Per rank, changes to its request state asked for by the engine's thread, applied by the rank's next work on its lane. */
    private final List<Queue<Consumer<LlamaShard<T>>>> pending = new ArrayList<>();
    private final StepBuffers.Counters held = new StepBuffers.Counters();
    /** Test seam: called with (rank, phase) before each partial work's body; may throw to fail that work. */
    volatile PartialHook beforePartial = (rank, phase) -> { };

    /** Called before a partial work. */
    @FunctionalInterface
    interface PartialHook {
        void before(int rank, int phase);
    }

    /**
     * A stage whose rank r is {@code shards.get(r)} (shards without collectives, in rank order); {@link #close}
     * hands each shard's weights to {@code releaseWeights} (their loader's release), once.
     */
    public TensorParallelStage(List<LlamaShard<T>> shards, Consumer<ShardWeights<T>> releaseWeights) {
        if (shards.isEmpty()) {
            throw new IllegalArgumentException("a tensor-parallel stage needs at least one shard");
        }
        for (int r = 0; r < shards.size(); r++) {
            if (shards.get(r).rank() != r) {
                throw new IllegalArgumentException("shard " + r + " of a stage has rank " + shards.get(r).rank());
            }
            pending.add(new ConcurrentLinkedQueue<>());
        }
        this.shards = List.copyOf(shards);
        this.releaseWeights = java.util.Objects.requireNonNull(releaseWeights, "releaseWeights");
    }

    /** The shards in rank order. */
    public List<LlamaShard<T>> shards() {
        return shards;
    }

    /** The tensor-parallel degree: the stage's lanes. */
    public int degree() {
        return shards.size();
    }

    /**
     * Plans one step over {@code segments} as works on the stage's lanes (submission lane r runs rank r), in the
     * order and with the {@code after} indices of {@link StageStep.Submission}; each work retains one share of the
     * step's buffers. {@code input} is read by each rank's first work, once the previous stage completed;
     * {@code output} is called by rank 0's last work with the stage's output (owned by the callee). Must not run
     * anything itself: the works run on the lanes.
     */
    public List<StageStep.Submission<Runnable>> plan(List<Segment> segments, Supplier<StageInput<T>> input,
                                                     Consumer<StageOutput<T>> output) {
        int t = shards.size();
        int phases = shards.get(0).phases();
        List<LlamaShard.Step<T>> steps = new ArrayList<>(t);
        for (int r = 0; r < t; r++) {
            steps.add(shards.get(r).step(segments));
        }
        StepBuffers<T> buffers = new StepBuffers<>(shards, steps, (phases + 1) * t, held);
        T embedding = shards.get(0).embedding();
        List<StageStep.Submission<Runnable>> works = new ArrayList<>((phases + 1) * t);
        for (int p = 0; p <= phases; p++) {
            List<Integer> after = new ArrayList<>(t);
            if (p > 0) {
                for (int r = 0; r < t; r++) {
                    after.add((p - 1) * t + r);
                }
            }
            for (int r = 0; r < t; r++) {
                works.add(new StageStep.Submission<>(r, body(r, p, phases, steps, input, output, embedding), after,
                        List.of(buffers.share())));
            }
        }
        return works;
    }

    private Runnable body(int r, int p, int phases, List<LlamaShard.Step<T>> steps, Supplier<StageInput<T>> input,
                          Consumer<StageOutput<T>> output, T embedding) {
        LlamaShard<T> shard = shards.get(r);
        LlamaShard.Step<T> own = steps.get(r);
        if (p == 0) {
            return () -> {
                applyPending(r);
                shard.begin(own, input.get(), embedding);
                beforePartial.before(r, 0);
                shard.partial(own, 0);
            };
        }
        if (p < phases) {
            return () -> {
                shard.reduce(own, p - 1, partials(steps, p - 1));
                beforePartial.before(r, p);
                shard.partial(own, p);
            };
        }
        if (r == 0) {
            return () -> {
                shard.reduce(own, p - 1, partials(steps, p - 1));
                output.accept(shard.finish(own));
            };
        }
        return () -> shard.finish(own);
    }

    private List<T> partials(List<LlamaShard.Step<T>> steps, int phase) {
        List<T> all = new ArrayList<>(steps.size());
        for (LlamaShard.Step<T> s : steps) {
            all.add(s.partial(phase));
        }
        return all;
    }

    /** Runs a step's works in plan order on the calling thread; no work of this stage may run on its lanes meanwhile. */
    @Override
    public StageOutput<T> forward(StageInput<T> input) {
        List<StageOutput<T>> out = new ArrayList<>(1);
        List<StageStep.Submission<Runnable>> works = plan(input.segments(), () -> input, out::add);
        try {
            for (StageStep.Submission<Runnable> w : works) {
                w.work().run();
            }
        } catch (RuntimeException | Error e) {
            out.forEach(o -> ops().release(o.tensor()));
            throw e;
        } finally {
            works.forEach(w -> w.retain().forEach(Retained::release));
        }
        return out.get(0);
    }

    /** Rank 0's ops: they read and free the stage's output. */
    @Override
    public NeuralOps<T> ops() {
        return shards.get(0).ops();
    }

    /** Frees every rank's cache of {@code requestId} now; only when no work of the stage runs (see {@link #endRequestOnLanes}). */
    @Override
    public boolean endRequest(long requestId) {
        boolean any = false;
        for (LlamaShard<T> shard : shards) {
            any |= shard.endRequest(requestId);
        }
        return any;
    }

    /** Forgets every rank's positions of {@code requestId} from {@code position} on, now; only when no work of the stage runs. */
    @Override
    public boolean rewind(long requestId, int position) {
        boolean any = false;
        for (LlamaShard<T> shard : shards) {
            any |= shard.rewind(requestId, position);
        }
        return any;
    }

    /** Frees {@code requestId}'s caches, each rank's by the rank's next work on its lane (or at {@link #close}). */
    public void endRequestOnLanes(long requestId) {
        pending.forEach(q -> q.add(shard -> shard.endRequest(requestId)));
    }

    /** Rewinds {@code requestId} to {@code position}, each rank by its next work on its lane (or at {@link #close}). */
    public void rewindOnLanes(long requestId, int position) {
        pending.forEach(q -> q.add(shard -> shard.rewind(requestId, position)));
    }

    /** Work for rank {@code rank}'s lane that applies what is pending for it (caches freed, rewound) now, not with its next step. */
    public Runnable applyPendingOnLane(int rank) {
        return () -> applyPending(rank);
    }

    /** Every rank's share of a position, summed: each rank holds its kv heads of every layer of the stage. */
    @Override
    public long kvBytesPerPosition() {
        long bytes = 0;
        for (LlamaShard<T> shard : shards) {
            bytes += shard.kvBytesPerPosition();
        }
        return bytes;
    }

    /** Every shard holds the same positions (a slice of each one's features): rank 0's count is the stage's. */
    @Override
    public long kvCachePositions() {
        return shards.get(0).kvCachePositions();
    }

    /** Steps whose buffers are not freed yet: planned, and some work of them not completed (or not yet released). */
    long stepsHeld() {
        return held.stepsHeld();
    }

    /** Buffer shares released more than once: always 0 unless retention is broken. */
    long overReleases() {
        return held.overReleases();
    }

    /** Applies what is pending, frees the shards' KV caches and weights; call once no work runs on the stage's lanes. */
    @Override
    public void close() {
        for (int r = 0; r < shards.size(); r++) {
            applyPending(r);
            LlamaShard<T> shard = shards.get(r);
            shard.close();
            releaseWeights.accept(shard.weights());
        }
    }

    private void applyPending(int rank) {
        Queue<Consumer<LlamaShard<T>>> q = pending.get(rank);
        for (Consumer<LlamaShard<T>> change = q.poll(); change != null; change = q.poll()) {
            change.accept(shards.get(rank));
        }
    }
}
