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
 * <p>Not thread-safe: a shard belongs to one lane, and its forward runs as that lane's work.
 *
 * @param <T> the backend tensor
 */
public final class LlamaShard<T> implements AutoCloseable {
    private final LlamaConfig config;
    private final TensorParallelism tp;
    private final ShardWeights<T> weights;
    private final NeuralOps<T> ops;
    private final ShardComm<T> comm;
    private final RequestCaches<T> caches;
    private final DecoderLayers<T> layers;

    /** Rank {@code comm.rank()} over its loaded {@code weights}. */
    public LlamaShard(TensorParallelism tp, ShardWeights<T> weights, NeuralOps<T> ops, ShardComm<T> comm) {
        this.config = tp.config();
        this.tp = tp;
        this.weights = weights;
        this.ops = ops;
        this.comm = comm;
        this.layers = new DecoderLayers<>(ops, config, tp.headsPerRank(), tp.kvHeadsPerRank(),
                config.intermediateSize() / tp.size(), comm::allReduceSum);
        this.caches = new RequestCaches<>(ops, weights.stage() + " rank " + comm.rank(), weights.layers().size(),
                tp.kvHeadsPerRank() * config.headDim(), config.maxPositions());
    }

    /** The shard's tensor-parallel rank. */
    public int rank() {
        return comm.rank();
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
