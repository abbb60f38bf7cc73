package io.graphlane.inference.tensorparallel;

import io.graphlane.core.GraphlaneException;
import io.graphlane.core.nn.NeuralOps;
import io.graphlane.inference.llama.CacheRestarts;
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
 * <p>A step runs as several lane works ({@link #begin} or {@link #gather}, {@link #open}, {@link #partial},
 * {@link #reduce} or {@link #addReduced}, {@link #finish}), planned by {@link TensorParallelStage} (every rank in one
 * JVM: each reduce a work ordered after every rank's partial work by completion handles) or by {@link CollectiveShard}
 * (one rank of a stage whose other ranks run on other nodes: each all-reduce a work on the rank's collective lane,
 * ordered between its partial and reduce works on the compute lane). The shard itself runs no collective.
 *
 * <p>A model that {@link LlamaConfig#restartsCache} (Phi-3's longrope) runs a step as {@link CacheRestarts} expands it,
 * as a whole stage does: where a decode step first passes the original context, the rank forgets its cached positions
 * of the request (by the step's first compute work, on its lane) and recomputes its heads of the whole sequence; the rank
 * that reads the stage's token ids keeps each request's tokens to put in front.
 *
 * <p>Not thread-safe: a shard's caches belong to one lane (its compute lane), and its works run as that lane's work; a
 * step's buffers are touched by one work at a time, the works ordered by completion handles.
 *
 * @param <T> the backend tensor
 */
public final class LlamaShard<T> implements AutoCloseable {
    private final LlamaConfig config;
    private final TensorParallelism tp;
    private final ShardWeights<T> weights;
    private final NeuralOps<T> ops;
    private final int rank;
    private final RequestCaches<T> caches;
    private final DecoderLayers<T> layers;
    /** The cache restart of a model that {@link LlamaConfig#restartsCache}, as the whole stage does it. */
    private final CacheRestarts restarts;

    /** Rank {@code weights.rank()} over its loaded {@code weights}, run as lane works of its stage's plan. */
    public LlamaShard(TensorParallelism tp, ShardWeights<T> weights, NeuralOps<T> ops) {
        this.config = tp.config();
        this.tp = tp;
        this.weights = weights;
        this.ops = ops;
        this.rank = weights.rank();
        this.layers = new DecoderLayers<>(ops, config, weights.stage().layers().start(), tp.headsPerRank(), tp.kvHeadsPerRank(),
                config.intermediateSize() / tp.size(), LlamaShard::noCollective);
        this.caches = new RequestCaches<>(ops, weights.stage() + " rank " + rank, weights.layers().size(),
                tp.kvHeadsPerRank() * config.headDim(), config.maxPositions());
        this.restarts = new CacheRestarts(config);
    }

    private static <T> void noCollective(T partial) {
        throw new IllegalStateException("a tensor-parallel shard runs its all-reduces as works of their own, never inside a layer");
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

    /** Forgets the positions of {@code requestId} from {@code position} on; false if the shard holds no cache for it. */
    public boolean rewind(long requestId, int position) {
        return caches.rewind(requestId, position);
    }

    /** Positions this shard holds in its KV caches, over every request; safe to read from any thread. */
    public long kvCachePositions() {
        return caches.positionsInUse();
    }

    /** The bytes one position of one request takes in this shard's KV caches: its share of the kv heads, in each of its layers. */
    public long kvBytesPerPosition() {
        return caches.bytesPerPosition();
    }

    /** Frees the KV cache of {@code requestId}; false if the shard holds none. */
    public boolean endRequest(long requestId) {
        restarts.end(requestId);
        return caches.end(requestId);
    }

    /** Frees every KV cache; the weights belong to whoever loaded them. */
    @Override
    public void close() {
        caches.releaseAll();
    }

    /**
     * What one step of this shard holds between its lane works: the caches reserved for it, the residual stream, the
     * scratch, and the two partial projections other ranks read (a partial work writes the one of its parity, so that
     * no rank overwrites a partial that another still reads: the work after next on a lane is ordered after every
     * rank's next work, which is the last to read it). Filled by {@link #begin} (or {@link #gather} and {@link #open}); freed once by
     * {@link #release} after every work that touches it has completed.
     */
    static final class Step<T> {
        /** The segments as the step was given them. */
        private final List<Segment> given;
        /** The segments it runs as: {@link #given}, or where the model restarts its cache, some from position 0. */
        private final List<Segment> segments;
        private final int[] positions;
        private volatile List<KvCache<T>> caches;
        private volatile T x;
        private volatile DecoderLayers.Scratch<T> scratch;
        private volatile T sum;
        @SuppressWarnings("unchecked")
        private final T[] partials = (T[]) new Object[2];
        private volatile boolean handedOver;

        private Step(List<Segment> given, List<Segment> segments) {
            this.given = List.copyOf(given);
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
     * A step over {@code segments} as given; it runs as {@link CacheRestarts#segments} expands them (every rank alike, as
     * that depends on the segments alone). Touches no cache: makes no change until its works run.
     */
    Step<T> step(List<Segment> segments) {
        return new Step<>(segments, restarts.segments(segments));
    }

    /**
     * The first work of a step in one JVM: makes the residual stream from {@code input} (token ids through
     * {@code embedding}, rank 0's table, or a copy of the previous stage's activation), then {@link #open}s the step.
     */
    void begin(Step<T> step, StageInput<T> input, T embedding) {
        requireSegments(step);
        step.x = ops.allocate(step.positions.length, config.hiddenSize());
        fill(step, step.x, input, embedding);
        open(step);
    }

    /**
     * A step's all-gather, on the rank's collective lane: rank 0 makes its rows of the residual stream from
     * {@code input} (as {@link #begin} does; the other ranks pass {@code null} and hold no rows) and {@code comm} gathers
     * them into every rank's residual stream. Touches no cache.
     */
    void gather(Step<T> step, StageInput<T> input, ShardComm<T> comm) {
        requireSegments(step);
        if ((rank == 0) != (input != null)) {
            throw new IllegalArgumentException(weights.stage() + " rank " + rank + ": only rank 0 reads the stage input");
        }
        int rows = step.positions.length;
        T own = ops.allocate(input == null ? 0 : rows, config.hiddenSize());
        try {
            if (input != null) {
                fill(step, own, input, weights.embedding());
            }
            T x = comm.allGather(own);
            step.x = x;
            if (ops.rows(x) != rows) {
                throw new GraphlaneException(weights.stage() + " rank " + rank + ": the gathered stage input has " + ops.rows(x)
                        + " rows, but the step's segments cover " + rows + " positions");
            }
        } finally {
            ops.release(own);
        }
    }

    /** Reserves the segments' caches and allocates the step's scratch and partials, once its residual stream is made. */
    void open(Step<T> step) {
        int rows = step.positions.length;
        CacheRestarts.forgetRestarted(step.given, step.segments, caches);
        step.caches = caches.reserve(step.segments);
        step.scratch = layers.scratch(rows);
        step.partials[0] = ops.allocate(rows, config.hiddenSize());
        step.partials[1] = ops.allocate(rows, config.hiddenSize());
    }

    private void requireSegments(Step<T> step) {
        if (step.segments.isEmpty()) {
            throw new IllegalArgumentException(weights.stage() + " rank " + rank + ": a step needs at least one segment");
        }
    }

    private void fill(Step<T> step, T x, StageInput<T> input, T embedding) {
        int rows = ops.rows(x);
        if (input instanceof StageInput.Tokens<T> tokens) {
            if (embedding == null) {
                throw new GraphlaneException(weights.stage() + " reads the previous stage's activation, got token ids");
            }
            layers.embed(embedding, restarts.tokens(step.given, step.segments, tokens.tokenIds(), weights.stage() + " rank " + rank), x);
        } else {
            T activation = ((StageInput.Hidden<T>) input).activation();
            if (ops.rows(activation) != rows || ops.cols(activation) != config.hiddenSize()) {
                throw new GraphlaneException(weights.stage() + ": activation should be " + rows + " x " + config.hiddenSize()
                        + " but is " + ops.rows(activation) + " x " + ops.cols(activation));
            }
            ops.copy(activation, x);
        }
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
        if (sum == null) {
            sum = ops.allocate(step.positions.length, config.hiddenSize());
            step.sum = sum;
        }
        ops.copy(partials.get(0), sum);
        for (int r = 1; r < partials.size(); r++) {
            ops.add(sum, partials.get(r), sum);
        }
        addToResidual(step, phase, sum);
    }

    /**
     * The reduce of a step whose all-reduce ran as a collective: this rank's partial of {@code phase} already holds the
     * sum over every rank (in place); adds it and the block's output bias to the residual stream.
     */
    void addReduced(Step<T> step, int phase) {
        addToResidual(step, phase, step.partial(phase));
    }

    private void addToResidual(Step<T> step, int phase, T sum) {
        // the output bias and Gemma's norm of the block output act on the reduced sum, never on a rank's partial
        layers.closeBlock(weights.layers().get(phase / 2), phase % 2 == 0, sum);
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
            return layers.head(x, segments, last, weights.finalNorm(), weights.lmHead());
        } finally {
            ops.release(last);
        }
    }
}
