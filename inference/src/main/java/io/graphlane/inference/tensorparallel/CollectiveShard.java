package io.graphlane.inference.tensorparallel;

import io.graphlane.core.nn.NeuralOps;
import io.graphlane.inference.llama.Segment;
import io.graphlane.inference.llama.StageInput;
import io.graphlane.inference.llama.StageOutput;
import io.graphlane.scheduler.pipeline.StageStep;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * One rank of a tensor-parallel stage whose other ranks run elsewhere (on other nodes), meeting them in the collectives
 * of its {@link ShardComm}. A step is planned as lane works ({@link #plan}) on two lanes of the rank's device, as a GPU
 * runs a compute stream and a collective (NCCL) stream: the <em>compute lane</em> runs the shard's math and holds its
 * KV caches, the <em>collective lane</em> runs the collectives and nothing else. With P = 2 × layers partial phases:
 *
 * <pre>
 *   work 0        collective:  all-gather of rank 0's stage input into every rank's residual stream
 *   work 1        compute:     open the step (reserve the caches), partial 0                       after work 0
 *   work 2 + 2p   collective:  all-reduce of partial p, in place                                   after work 1 + 2p
 *   work 3 + 2p   compute:     add the all-reduced partial p to the residual; partial p + 1,       after work 2 + 2p
 *                              or, after the last phase, the stage's output on rank 0 and the KV commit
 * </pre>
 *
 * <p>So no compute work runs a collective or waits for another rank inside its body: it is ordered after the collective
 * work before it by that work's completion handle, and the collective lane is the collectives' executor, where the
 * ring waits for the other ranks. Collectives must be entered in the same order on every rank: each rank's collective
 * lane is FIFO, a step's collective works are submitted in plan order, and every rank is given the steps in the same
 * order (the stage's shard 0 tells its peers each step in its own submission order), so the n-th collective of every
 * rank is the same one. A lane hands ready work to its worker in the order it becomes ready, not in submission order,
 * so {@link ShardLanes} also orders each step's first work on each lane after the lane's previous work of the group.
 *
 * <p>Every buffer of a step (residual stream, scratch, partials) is retained by every work of the step and freed exactly
 * once, after the last of them completed, also when one failed or never ran. A work that fails leaves the group
 * ({@link ShardComm#leave}) from its own body, on its lane, before it fails, so the other ranks' next collective fails
 * naming this rank instead of waiting; the works after it are poisoned and never run, and the caches advance only
 * when the step's last work runs. {@code leave} takes the member's lock, held by a collective while it waits for its
 * peers: a compute work calls it while this rank's collective lane waits (device-side) for that very work, so it
 * takes the lock at once, except for a step's last work, during which the collective lane may already run the next
 * step's all-gather; that one ends when its peers arrive or at the member's timeout. A collective work that does not run
 * because one before it failed has nothing to leave for: the failed one left already. A work that never runs for
 * another reason (its lane refused it or stopped) does not leave: the other ranks' next collective then fails naming
 * this rank absent once the member's timeout passed.
 *
 * @param <T> the backend tensor
 */
public final class CollectiveShard<T> implements AutoCloseable {
    /** The lane index of a compute work in a plan's submissions. */
    public static final int COMPUTE = 0;
    /** The lane index of a collective work in a plan's submissions. */
    public static final int COLLECTIVE = 1;

    private final LlamaShard<T> shard;
    private final ShardComm<T> comm;
    private final StepBuffers.Counters held = new StepBuffers.Counters();
    /** Test seam: called with (rank, phase) before each partial's body; may throw to fail that work. */
    volatile TensorParallelStage.PartialHook beforePartial = (rank, phase) -> { };

    /** Rank {@code shard.rank()} meeting the other ranks in {@code comm}, whose rank must be the same. */
    public CollectiveShard(LlamaShard<T> shard, ShardComm<T> comm) {
        this.shard = Objects.requireNonNull(shard, "shard");
        this.comm = Objects.requireNonNull(comm, "comm");
        if (comm.rank() != shard.rank()) {
            throw new IllegalArgumentException("shard " + shard.rank() + " was given the collectives of rank " + comm.rank());
        }
    }

    /** The rank in the stage. */
    public int rank() {
        return shard.rank();
    }

    /** The operations the shard issues its work through; they read and free rank 0's output. */
    public NeuralOps<T> ops() {
        return shard.ops();
    }

    /**
     * Plans one step over {@code segments} as works on this rank's compute lane ({@link #COMPUTE}) and collective lane
     * ({@link #COLLECTIVE}), in submission order, each naming in {@code after} the earlier submission it orders after and
     * retaining one share of the step's buffers. On rank 0 {@code input} is read by the all-gather work and
     * {@code output} is called by the last work with the stage's output (owned by the callee); the other ranks pass
     * {@code null} for both. Runs nothing itself.
     */
    public List<StageStep.Submission<Runnable>> plan(List<Segment> segments, Supplier<StageInput<T>> input,
                                                     Consumer<StageOutput<T>> output) {
        int rank = shard.rank();
        if ((rank == 0) != (input != null) || (rank == 0) != (output != null)) {
            throw new IllegalArgumentException("only rank 0 of a stage reads its input and makes its output; rank " + rank
                    + " was given " + (input == null ? "no input" : "an input") + " and " + (output == null ? "no output" : "an output"));
        }
        int phases = shard.phases();
        LlamaShard.Step<T> step = shard.step(segments);
        int count = 2 + 2 * phases;
        StepBuffers<T> buffers = new StepBuffers<>(List.of(shard), List.of(step), count, held);
        List<StageStep.Submission<Runnable>> works = new ArrayList<>(count);
        works.add(new StageStep.Submission<>(COLLECTIVE, leaving(() -> shard.gather(step, input == null ? null : input.get(), comm)),
                List.of(), List.of(buffers.share())));
        works.add(new StageStep.Submission<>(COMPUTE, leaving(() -> {
            shard.open(step);
            next(step, 0, phases, output);
        }), List.of(0), List.of(buffers.share())));
        for (int p = 0; p < phases; p++) {
            int phase = p;
            works.add(new StageStep.Submission<>(COLLECTIVE, leaving(() -> comm.allReduceSum(step.partial(phase))),
                    List.of(works.size() - 1), List.of(buffers.share())));
            works.add(new StageStep.Submission<>(COMPUTE, leaving(() -> {
                shard.addReduced(step, phase);
                next(step, phase + 1, phases, output);
            }), List.of(works.size() - 1), List.of(buffers.share())));
        }
        return works;
    }

    /** Partial {@code phase}, or after the last phase the step's end: the output on rank 0 and the KV commit. */
    private void next(LlamaShard.Step<T> step, int phase, int phases, Consumer<StageOutput<T>> output) {
        if (phase < phases) {
            beforePartial.before(shard.rank(), phase);
            shard.partial(step, phase);
            return;
        }
        StageOutput<T> out = shard.finish(step);
        if (output != null) {
            output.accept(out);
        }
    }

    /** {@code body}, leaving the group from the work's own thread if it fails, before the work fails. */
    private Runnable leaving(Runnable body) {
        return () -> {
            try {
                body.run();
            } catch (RuntimeException | Error e) {
                comm.leave(e);
                throw e;
            }
        };
    }

    /** Forgets the positions of {@code requestId} from {@code position} on; only as work of the compute lane. */
    public boolean rewind(long requestId, int position) {
        return shard.rewind(requestId, position);
    }

    /** Frees the KV cache of {@code requestId}; only as work of the compute lane. */
    public boolean endRequest(long requestId) {
        return shard.endRequest(requestId);
    }

    /** Positions this rank holds in its KV caches; safe to read from any thread. */
    public long kvCachePositions() {
        return shard.kvCachePositions();
    }

    /** The steps of this rank whose buffers are not freed yet, and shares released twice. */
    StepBuffers.Counters held() {
        return held;
    }

    /** Frees the shard's KV caches (its weights belong to whoever loaded them); once no work of it runs. */
    @Override
    public void close() {
        shard.close();
    }
}
