package io.graphlane.inference.pipeline;

import io.graphlane.core.nn.HostCopy;
import io.graphlane.inference.llama.Segment;
import io.graphlane.inference.llama.StageForward;
import io.graphlane.inference.llama.StageInput;
import io.graphlane.inference.llama.StageOutput;
import io.graphlane.inference.offload.OffloadedStage;
import io.graphlane.inference.tensorparallel.TensorParallelStage;
import io.graphlane.scheduler.pipeline.MicroBatch;
import io.graphlane.scheduler.pipeline.SampledToken;
import io.graphlane.scheduler.pipeline.StageProgram;
import io.graphlane.scheduler.pipeline.StageStep;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * The Llama family as a {@link StageProgram}: stage k's work runs {@link StageForward#forward} of
 * stage k on its lane, reading the activation stage k−1 left in its slot; the last stage also
 * samples each request's next token with the request's sampling state: on its lane when the
 * logits are readable at once (the CPU), otherwise from their host copy once the step completed
 * ({@link #sampledTokens}, on a device whose work only enqueues). Everything that touches
 * a stage (its forward, its KV caches) runs on that stage's lane: the caches of ended requests are
 * dropped, and those of failed steps rewound, by the next work on the lane (in order, before it reads
 * them): a step, or the change work the engine sends at once ({@link #planChanges}), or when the program is
 * closed. Each request's caches grow no further than the positions admission reserved for it
 * ({@link MicroBatch.Entry#reservedPositions()}). A {@link TensorParallelStage} runs on T lanes, one per rank: its
 * step is the stage's plan of partial and reduce works ordered by completion handles
 * ({@link TensorParallelStage#plan}), rank 0's last work fills the stage's slot (and samples on the last
 * stage), and each rank's caches change by that rank's next work on its own lane. An {@link OffloadedStage} runs on its
 * compute lane and a transfer lane: its step is compute works in ranges of layers, each after the promotion of the
 * streamed layer it reads ({@code io.graphlane.inference.offload.LayerStreaming}).
 *
 * @param <T> the backend tensor
 * @param <W> backend-native work
 */
public final class LlamaStageProgram<T, W> implements StageProgram<W, StageSlot<T>>, AutoCloseable {
    private final List<StageForward<T>> stages;
    private final Function<Runnable, W> asWork;
    /** Per stage, changes to its request state asked for on the engine's thread, applied by the stage's next work on its lane. */
    private final List<Queue<Consumer<StageForward<T>>>> pending = new ArrayList<>();
    /** Per stage, the time its work bodies have run on its lane. */
    private final AtomicLongArray busyNanos;

    /**
     * A program over {@code stages} (in pipeline order, stage k run only by lane k's work);
     * {@code asWork} turns a body into the backend's work item (on the CPU, a {@code CpuWork}).
     */
    public LlamaStageProgram(List<? extends StageForward<T>> stages, Function<Runnable, W> asWork) {
        if (stages.isEmpty()) {
            throw new IllegalArgumentException("a pipeline needs at least one stage");
        }
        this.stages = List.copyOf(stages);
        this.asWork = asWork;
        this.busyNanos = new AtomicLongArray(stages.size());
        for (int i = 0; i < stages.size(); i++) {
            pending.add(new ConcurrentLinkedQueue<>());
        }
    }

    @Override
    public int stageCount() {
        return stages.size();
    }

    /** One lane per stage, or one per rank of a tensor-parallel stage. */
    @Override
    public int laneCount(int stage) {
        if (stages.get(stage) instanceof OffloadedStage<?, ?, ?, ?>) {
            return 2; // its compute lane and its transfer lane
        }
        return stages.get(stage) instanceof TensorParallelStage<T> tp ? tp.degree() : 1;
    }

    @Override
    public StageStep<W, StageSlot<T>> plan(int stage, MicroBatch batch, StageSlot<T> input) {
        StageForward<T> llama = stages.get(stage);
        List<Segment> segments = new ArrayList<>(batch.entries().size());
        for (MicroBatch.Entry e : batch.entries()) {
            segments.add(new Segment(e.requestId(), e.startPosition(), e.tokens().length, e.reservedPositions()));
        }
        StageSlot<T> out = new StageSlot<>(llama.ops());
        boolean last = stage == stages.size() - 1;
        if (llama instanceof TensorParallelStage<T> tp) {
            return planShards(stage, tp, batch, segments, input, out, last);
        }
        if (llama instanceof OffloadedStage<?, ?, ?, ?> streamed) {
            @SuppressWarnings("unchecked")
            OffloadedStage<T, ?, ?, W> offloaded = (OffloadedStage<T, ?, ?, W>) streamed;
            return new StageStep<>(offloaded.plan(() -> inputOf(stage, batch, segments, input),
                    produced -> deliver(offloaded, batch, out, produced, last), () -> applyPending(stage),
                    body -> asWork.apply(timed(stage, body))), out);
        }
        Runnable body = () -> {
            long started = System.nanoTime();
            try {
                run(stage, llama, batch, segments, input, out, last);
            } finally {
                busyNanos.addAndGet(stage, System.nanoTime() - started);
            }
        };
        return new StageStep<>(asWork.apply(body), out);
    }

    /** Stage {@code stage}'s step as its tensor-parallel plan: each rank's works on its own lane, timed into the stage's busy time. */
    private StageStep<W, StageSlot<T>> planShards(int stage, TensorParallelStage<T> tp, MicroBatch batch, List<Segment> segments,
                                                 StageSlot<T> input, StageSlot<T> out, boolean last) {
        List<StageStep.Submission<Runnable>> works = tp.plan(segments, () -> inputOf(stage, batch, segments, input),
                produced -> deliver(tp, batch, out, produced, last));
        List<StageStep.Submission<W>> submissions = new ArrayList<>(works.size());
        for (StageStep.Submission<Runnable> w : works) {
            submissions.add(new StageStep.Submission<>(w.lane(), asWork.apply(timed(stage, w.work())), w.after(), w.retain()));
        }
        return new StageStep<>(submissions, out);
    }

    /** {@code body}, timed into stage {@code stage}'s busy time. */
    private Runnable timed(int stage, Runnable body) {
        return () -> {
            long started = System.nanoTime();
            try {
                body.run();
            } finally {
                busyNanos.addAndGet(stage, System.nanoTime() - started);
            }
        };
    }

    /** The body of stage {@code stage}'s work for one step, on its lane. */
    private void run(int stage, StageForward<T> llama, MicroBatch batch, List<Segment> segments, StageSlot<T> input, StageSlot<T> out,
                     boolean last) {
        applyPending(stage);
        deliver(llama, batch, out, llama.forward(inputOf(stage, batch, segments, input)), last);
    }

    private StageInput<T> inputOf(int stage, MicroBatch batch, List<Segment> segments, StageSlot<T> input) {
        return stage == 0
                ? new StageInput.Tokens<>(segments, concatTokens(batch))
                : new StageInput.Hidden<>(segments, input.output().tensor());
    }

    /** Fills the stage's slot with what it produced; on the last stage samples from the logits, or leaves their host copy. */
    private void deliver(StageForward<T> llama, MicroBatch batch, StageSlot<T> out, StageOutput<T> produced, boolean last) {
        out.fill(produced);
        if (last) {
            HostCopy logits = llama.ops().copyToHost(produced.tensor());
            if (logits.readableNow()) {
                try {
                    out.sampled(sample(logits, batch));
                } finally {
                    logits.close();
                }
            } else {
                out.pendingLogits(logits);
            }
        }
    }

    /**
     * How long stage {@code stage}'s work bodies have run on its lane so far (for a tensor-parallel stage, the mean
     * over its shard lanes, so that it stays a share of wall time). On the CPU that is the stage's compute; on a device
     * whose work only enqueues, it is the time spent enqueueing (and sampling).
     */
    public long busyNanos(int stage) {
        return busyNanos.get(stage) / (stages.get(stage) instanceof TensorParallelStage<T> tp ? tp.degree() : 1);
    }

    /** Positions stage {@code stage} holds in its KV caches now; safe to read from any thread. */
    public long kvCachePositions(int stage) {
        return stages.get(stage).kvCachePositions();
    }

    @Override
    public SampledToken[] sampledTokens(MicroBatch batch, StageSlot<T> lastOutput) {
        SampledToken[] sampled = lastOutput.sampledOrNull();
        return sampled != null ? sampled : sample(lastOutput.logits(), batch); // the slot closes the copy on release
    }

    @Override
    public void release(StageSlot<T> output) {
        output.release();
    }

    @Override
    public void forget(long requestId) {
        for (int s = 0; s < stages.size(); s++) {
            if (stages.get(s) instanceof TensorParallelStage<T> tp) {
                tp.endRequestOnLanes(requestId);
            } else {
                pending.get(s).add(stage -> stage.endRequest(requestId));
            }
        }
    }

    @Override
    public void rewind(long requestId, int position) {
        for (int s = 0; s < stages.size(); s++) {
            if (stages.get(s) instanceof TensorParallelStage<T> tp) {
                tp.rewindOnLanes(requestId, position);
            } else {
                pending.get(s).add(stage -> stage.rewind(requestId, position));
            }
        }
    }

    /** One work per lane of the stage (per rank of a tensor-parallel one) that applies what is pending there now. */
    @Override
    public List<StageStep.Submission<W>> planChanges(int stage) {
        if (stages.get(stage) instanceof TensorParallelStage<T> tp) {
            List<StageStep.Submission<W>> works = new ArrayList<>(tp.degree());
            for (int r = 0; r < tp.degree(); r++) {
                works.add(new StageStep.Submission<>(r, asWork.apply(tp.applyPendingOnLane(r)), List.of()));
            }
            return works;
        }
        return List.of(new StageStep.Submission<>(0, asWork.apply(() -> applyPending(stage)), List.of()));
    }

    /** Every stage's share of a position, summed: the KV bytes one position of one request takes in this pipeline. */
    @Override
    public long kvBytesPerPosition() {
        long bytes = 0;
        for (StageForward<T> stage : stages) {
            bytes += stage.kvBytesPerPosition();
        }
        return bytes;
    }

    /** Frees every stage's KV caches; call once no work runs on the stage lanes any more. */
    @Override
    public void close() {
        for (int s = 0; s < stages.size(); s++) {
            applyPending(s);
            stages.get(s).close();
        }
    }

    private void applyPending(int stage) {
        Queue<Consumer<StageForward<T>>> q = pending.get(stage);
        for (Consumer<StageForward<T>> change = q.poll(); change != null; change = q.poll()) {
            change.accept(stages.get(stage));
        }
    }

    private static int[] concatTokens(MicroBatch batch) {
        int[] all = new int[batch.positionCount()];
        int at = 0;
        for (MicroBatch.Entry e : batch.entries()) {
            System.arraycopy(e.tokens(), 0, all, at, e.tokens().length);
            at += e.tokens().length;
        }
        return all;
    }

    private static SampledToken[] sample(HostCopy logits, MicroBatch batch) {
        return sampleRows(logits.values(), logits.rows(), logits.cols(), batch);
    }

    /**
     * The next token of each entry of {@code batch}, sampled with the entry's sampling state from row i of
     * {@code all} ({@code rows × vocab} logits, one row per entry in entry order): the one sampling site of every
     * stage program whose last stage produces logits, wherever that stage ran.
     */
    public static SampledToken[] sampleRows(float[] all, int rows, int vocab, MicroBatch batch) {
        if (rows != batch.entries().size()) {
            throw new IllegalStateException("the last stage produced " + rows + " rows of logits for a micro-batch of "
                    + batch.entries().size() + " requests");
        }
        SampledToken[] tokens = new SampledToken[rows];
        float[] row = new float[vocab];
        for (int i = 0; i < rows; i++) {
            System.arraycopy(all, i * vocab, row, 0, vocab);
            tokens[i] = batch.entries().get(i).sampling().next(row);
        }
        return tokens;
    }
}
