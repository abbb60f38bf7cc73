package io.graphlane.inference.tensorparallel;

import io.graphlane.core.GraphlaneException;
import io.graphlane.core.nn.NeuralOps;
import io.graphlane.inference.llama.DecoderLayers;
import io.graphlane.inference.llama.KvCache;
import io.graphlane.inference.llama.LayerWeights;
import io.graphlane.inference.llama.LlamaConfig;
import io.graphlane.inference.llama.RequestCaches;
import io.graphlane.inference.llama.Segment;
import io.graphlane.inference.llama.StageInput;
import io.graphlane.inference.llama.StageOutput;
import java.util.List;

/**
 * One tensor-parallel rank of one pipeline stage (Megatron-style): it holds the residual stream
 * whole, and per layer its heads of q/k/v and their KV cache, its columns of gate/up, and the
 * matching input slices of o and down, so that
 *
 * <pre>
 *   x = rank 0's input (embedding or previous stage), gathered to every rank
 *   per layer:  h = rmsnorm(x);  a = attention(own heads of h·Wqᵀ, h·Wkᵀ, h·Wvᵀ)·Wo[:, own]ᵀ;  x += allreduce(a) (+bo)
 *               h = rmsnorm(x);  m = (silu(h·Wgate[own]ᵀ) · h·Wup[own]ᵀ)·Wdown[:, own]ᵀ;      x += allreduce(m)
 *   rank 0 of the last stage: logits = rmsnorm(x_last)·Wheadᵀ
 * </pre>
 *
 * <p>Two ways to run it. {@link #forward} runs a whole step as one work and meets the other ranks in the
 * collectives of its {@link ShardComm} (the shards of a stage on several nodes). Inside one JVM a
 * {@link TensorParallelStage} runs it as several works instead ({@link #begin}, {@link #partial},
 * {@link #reduce}, {@link #finish}), each all-reduce a work of its own ordered after every rank's partial
 * work by completion handles, so no work waits for another rank; such a shard has no collectives.
 *
 * <p>Not thread-safe: a shard belongs to one lane, and its works run as that lane's work.
 *
 * @param <T> the backend tensor
 */
public final class LlamaShard<T> implements AutoCloseable {
    private final LlamaConfig config;
    private final TensorParallelism tp;
    private final ShardWeights<T> weights;
    private final NeuralOps<T> ops;
    /** The collectives of a shard that runs a step as one work; null for a shard run as several lane works. */
    private final ShardComm<T> comm;
    private final int rank;
    private final RequestCaches<T> caches;
    private final DecoderLayers<T> layers;

    /** Rank {@code comm.rank()} over its loaded {@code weights}, meeting the other ranks in {@code comm}'s collectives. */
    public LlamaShard(TensorParallelism tp, ShardWeights<T> weights, NeuralOps<T> ops, ShardComm<T> comm) {
        this(tp, weights, ops, comm, comm.rank());
    }

    /** Rank {@code weights.rank()} run as lane works of a {@link TensorParallelStage}: it has no collectives, and {@link #forward} refuses. */
    public LlamaShard(TensorParallelism tp, ShardWeights<T> weights, NeuralOps<T> ops) {
        this(tp, weights, ops, null, weights.rank());
    }

    private LlamaShard(TensorParallelism tp, ShardWeights<T> weights, NeuralOps<T> ops, ShardComm<T> comm, int rank) {
        this.config = tp.config();
        this.tp = tp;
        this.weights = weights;
        this.ops = ops;
        this.comm = comm;
        this.rank = rank;
        this.layers = new DecoderLayers<>(ops, config, tp.headsPerRank(), tp.kvHeadsPerRank(),
                config.intermediateSize() / tp.size(), comm != null ? comm::allReduceSum : LlamaShard::noCollective);
        this.caches = new RequestCaches<>(ops, weights.stage() + " rank " + rank, weights.layers().size(),
                tp.kvHeadsPerRank() * config.headDim(), config.maxPositions());
    }

    private static <T> void noCollective(T partial) {
        throw new IllegalStateException("this shard runs as lane works of a tensor-parallel stage and has no collectives");
    }

    /** The shard's tensor-parallel rank. */
    public int rank() {
        return rank;
    }

    /** The shard's weights (owned by whoever loaded them). */
    public ShardWeights<T> weights() {
        return weights;
    }

    /** The operations the shard issues its work through. */
    public NeuralOps<T> ops() {
        return ops;
    }

    /**
     * Runs the shard over one micro-batch of {@code segments}. Rank 0 reads {@code input} (the
     * others pass {@code null}) and returns the stage's output; the other ranks return {@code null}.
     * If anything fails, this rank leaves the group first, so the other ranks fail instead of waiting,
     * and no cache advances.
     */
    public StageOutput<T> forward(List<Segment> segments, StageInput<T> input) {
        if (comm == null) {
            throw new IllegalStateException(weights.stage() + " rank " + rank + " runs as lane works of its stage; it has no collectives");
        }
        try {
            return run(segments, input);
        } catch (RuntimeException | Error e) {
            comm.leave(e);
            throw e;
        }
    }

    private StageOutput<T> run(List<Segment> segments, StageInput<T> input) {
        if (segments.isEmpty()) {
            throw new IllegalArgumentException(weights.stage() + " rank " + comm.rank() + ": a step needs at least one segment");
        }
        if ((comm.rank() == 0) != (input != null)) {
            throw new IllegalArgumentException(weights.stage() + " rank " + comm.rank() + ": only rank 0 reads the stage input");
        }
        List<KvCache<T>> requestCaches = caches.reserve(segments);
        int[] positions = RequestCaches.positionsOf(segments);
        T x = broadcastInput(input, positions.length);
        boolean handedOver = false;
        DecoderLayers.Scratch<T> s = layers.scratch(positions.length);
        try {
            for (int l = 0; l < weights.layers().size(); l++) {
                LayerWeights<T> w = weights.layers().get(l);
                layers.attention(l, w, x, positions, segments, requestCaches, s);
                layers.feedForward(w, x, s);
            }
            StageOutput<T> output = null;
            if (comm.rank() == 0) {
                if (weights.stage().isLast()) {
                    output = new StageOutput.Logits<>(segments, head(x, segments));
                } else {
                    output = new StageOutput.Hidden<>(segments, x);
                    handedOver = true;
                }
            }
            for (int i = 0; i < segments.size(); i++) {
                requestCaches.get(i).commit(segments.get(i).length());
            }
            caches.publishUsage();
            return output;
        } finally {
            s.release();
            if (!handedOver) {
                ops.release(x);
            }
        }
    }

    /** Forgets the positions of {@code requestId} from {@code position} on; false if the shard holds no cache for it. */
    public boolean rewind(long requestId, int position) {
        return caches.rewind(requestId, position);
    }

    /** Positions this shard holds in its KV caches, over every request; safe to read from any thread. */
    public long kvCachePositions() {
        return caches.positionsInUse();
    }

    /** Frees the KV cache of {@code requestId}; false if the shard holds none. */
    public boolean endRequest(long requestId) {
        return caches.end(requestId);
    }

    /** Frees every KV cache; the weights belong to whoever loaded them. */
    @Override
    public void close() {
        caches.releaseAll();
    }

    /** Rank 0 makes the residual stream (embedding or the previous stage's activation); an all-gather hands it to every rank. */
    private T broadcastInput(StageInput<T> input, int rows) {
        T own;
        if (input == null) {
            own = ops.allocate(0, config.hiddenSize());
        } else {
            own = ops.allocate(rows, config.hiddenSize());
            if (input instanceof StageInput.Tokens<T> tokens) {
                if (weights.embedding() == null) {
                    ops.release(own);
                    throw new GraphlaneException(weights.stage() + " reads the previous stage's activation, got token ids");
                }
                ops.embedding(weights.embedding(), tokens.tokenIds(), own);
            } else {
                T activation = ((StageInput.Hidden<T>) input).activation();
                if (ops.rows(activation) != rows || ops.cols(activation) != config.hiddenSize()) {
                    ops.release(own);
                    throw new GraphlaneException(weights.stage() + ": activation should be " + rows + " x " + config.hiddenSize()
                            + " but is " + ops.rows(activation) + " x " + ops.cols(activation));
                }
                ops.copy(activation, own);
            }
        }
        try {
            return comm.allGather(own);
        } finally {
            ops.release(own);
        }
    }

    /**
     * What one step of this shard holds between its lane works: the caches reserved for it, the residual stream, the
     * scratch, and the two partial projections other ranks read (a partial work writes the one of its parity, so that
     * no rank overwrites a partial that another still reads: the work after next on a lane is ordered after every
     * rank's next work, which is the last to read it). Filled by {@link #begin} on the shard's lane; freed once by
     * {@link #release} after every work that touches it has completed.
     */
    static final class Step<T> {
        private final List<Segment> segments;
        private final int[] positions;
        private volatile List<KvCache<T>> caches;
        private volatile T x;
        private volatile DecoderLayers.Scratch<T> scratch;
        private volatile T sum;
        @SuppressWarnings("unchecked")
        private final T[] partials = (T[]) new Object[2];
        private volatile boolean handedOver;

        Step(List<Segment> segments) {
            this.segments = List.copyOf(segments);
            this.positions = RequestCaches.positionsOf(segments);
        }

        /** The partial projection written by partial work {@code phase} (see {@link #partial}). */
        T partial(int phase) {
            T p = partials[phase % 2];
            if (p == null) {
                throw new IllegalStateException("partial " + phase + " read before the work that writes it ran");
            }
            return p;
        }
    }

    /**
     * The first work of a step: reserves the segments' caches and makes the residual stream from {@code input} (token ids
     * through {@code embedding}, rank 0's table, or a copy of the previous stage's activation), then allocates the step's
     * buffers.
     */
    void begin(Step<T> step, StageInput<T> input, T embedding) {
        if (step.segments.isEmpty()) {
            throw new IllegalArgumentException(weights.stage() + " rank " + rank + ": a step needs at least one segment");
        }
        int rows = step.positions.length;
        step.caches = caches.reserve(step.segments);
        T x = ops.allocate(rows, config.hiddenSize());
        step.x = x;
        if (input instanceof StageInput.Tokens<T> tokens) {
            if (embedding == null) {
                throw new GraphlaneException(weights.stage() + " reads the previous stage's activation, got token ids");
            }
            ops.embedding(embedding, tokens.tokenIds(), x);
        } else {
            T activation = ((StageInput.Hidden<T>) input).activation();
            if (ops.rows(activation) != rows || ops.cols(activation) != config.hiddenSize()) {
                throw new GraphlaneException(weights.stage() + ": activation should be " + rows + " x " + config.hiddenSize()
                        + " but is " + ops.rows(activation) + " x " + ops.cols(activation));
            }
            ops.copy(activation, x);
        }
        step.scratch = layers.scratch(rows);
        step.partials[0] = ops.allocate(rows, config.hiddenSize());
        step.partials[1] = ops.allocate(rows, config.hiddenSize());
        step.sum = ops.allocate(rows, config.hiddenSize());
    }

    /** The partial works of a step, two per layer: phase 2l is layer l's attention, phase 2l+1 its MLP. */
    int phases() {
        return 2 * weights.layers().size();
    }

    /** Partial work {@code phase}: this rank's share of that block's output projection, into the step's partial of its parity. */
    void partial(Step<T> step, int phase) {
        int l = phase / 2;
        LayerWeights<T> w = weights.layers().get(l);
        T out = step.partials[phase % 2];
        if (phase % 2 == 0) {
            layers.attentionPartial(l, w, step.x, step.positions, step.segments, step.caches, step.scratch, out);
        } else {
            layers.feedForwardPartial(w, step.x, step.scratch, out);
        }
    }

    /**
     * The all-reduce of partial work {@code phase}: adds every rank's partial ({@code partials}, in rank order, so every
     * rank sums the same way) and the block's output bias to the residual stream. Runs once every rank's partial work of
     * {@code phase} has completed.
     */
    void reduce(Step<T> step, int phase, List<T> partials) {
        T sum = step.sum;
        ops.copy(partials.get(0), sum);
        for (int r = 1; r < partials.size(); r++) {
            ops.add(sum, partials.get(r), sum);
        }
        LayerWeights<T> w = weights.layers().get(phase / 2);
        if (phase % 2 == 0 && w.bo() != null) {
            ops.addBias(sum, w.bo());
        }
        ops.add(step.x, sum, step.x);
    }

    /**
     * The last work of a step, once every work of it succeeded: commits the caches and, on rank 0, returns the stage's
     * output (the residual stream handed over, or the logits on the last stage); null on the other ranks.
     */
    StageOutput<T> finish(Step<T> step) {
        StageOutput<T> output = null;
        if (rank == 0) {
            if (weights.stage().isLast()) {
                output = new StageOutput.Logits<>(step.segments, head(step.x, step.segments));
            } else {
                output = new StageOutput.Hidden<>(step.segments, step.x);
                step.handedOver = true;
            }
        }
        for (int i = 0; i < step.segments.size(); i++) {
            step.caches.get(i).commit(step.segments.get(i).length());
        }
        caches.publishUsage();
        return output;
    }

    /** Frees what {@code step} allocated (not the residual stream if {@link #finish} handed it over); once, after its last work. */
    void release(Step<T> step) {
        if (step.scratch != null) {
            step.scratch.release();
        }
        for (T t : step.partials) {
            if (t != null) {
                ops.release(t);
            }
        }
        if (step.sum != null) {
            ops.release(step.sum);
        }
        if (step.x != null && !step.handedOver) {
            ops.release(step.x);
        }
    }

    /** Rank 0's embedding table (first stage), which the other ranks of a stage in this JVM read too; null elsewhere. */
    T embedding() {
        return weights.embedding();
    }

    private T head(T x, List<Segment> segments) {
        T last = ops.allocate(segments.size(), config.hiddenSize());
        try {
            int row = 0;
            for (int i = 0; i < segments.size(); i++) {
                row += segments.get(i).length();
                ops.copy(ops.rowSlice(x, row - 1, row), ops.rowSlice(last, i, i + 1));
            }
            ops.rmsNorm(last, weights.finalNorm(), config.rmsNormEps(), last);
            T logits = ops.allocate(segments.size(), config.vocabSize());
            ops.linear(last, weights.lmHead(), logits);
            return logits;
        } finally {
            ops.release(last);
        }
    }
}
