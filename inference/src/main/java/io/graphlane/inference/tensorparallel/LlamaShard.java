package io.graphlane.inference.tensorparallel;

import io.graphlane.core.GraphlaneException;
import io.graphlane.core.nn.NeuralOps;
import io.graphlane.inference.llama.KvCache;
import io.graphlane.inference.llama.LayerWeights;
import io.graphlane.inference.llama.LlamaConfig;
import io.graphlane.inference.llama.Segment;
import io.graphlane.inference.llama.StageInput;
import io.graphlane.inference.llama.StageOutput;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

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
    private final Map<Long, KvCache<T>> caches = new HashMap<>();

    /** Rank {@code comm.rank()} over its loaded {@code weights}. */
    public LlamaShard(TensorParallelism tp, ShardWeights<T> weights, NeuralOps<T> ops, ShardComm<T> comm) {
        this.config = tp.config();
        this.tp = tp;
        this.weights = weights;
        this.ops = ops;
        this.comm = comm;
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
        List<KvCache<T>> requestCaches = reserveCaches(segments);
        int[] positions = positionsOf(segments);
        T x = broadcastInput(input, positions.length);
        boolean handedOver = false;
        Scratch<T> s = new Scratch<>(ops, config, tp, positions.length);
        try {
            for (int l = 0; l < weights.layers().size(); l++) {
                LayerWeights<T> w = weights.layers().get(l);
                attentionBlock(l, w, x, positions, segments, requestCaches, s);
                feedForwardBlock(w, x, s);
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
            return output;
        } finally {
            s.release();
            if (!handedOver) {
                ops.release(x);
            }
        }
    }

    /** Frees the KV cache of {@code requestId}; false if this shard holds none. */
    /** Forgets the positions of {@code requestId} from {@code position} on; false if the shard holds no cache for it. */
    public boolean rewind(long requestId, int position) {
        KvCache<T> cache = caches.get(requestId);
        if (cache == null) {
            return false;
        }
        cache.truncate(position);
        return true;
    }

    /** Frees the KV cache of {@code requestId}; false if the shard holds none. */
    public boolean endRequest(long requestId) {
        KvCache<T> cache = caches.remove(requestId);
        if (cache == null) {
            return false;
        }
        cache.release();
        return true;
    }

    /** Frees every KV cache; the weights belong to whoever loaded them. */
    @Override
    public void close() {
        caches.values().forEach(KvCache::release);
        caches.clear();
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

    private void attentionBlock(int l, LayerWeights<T> w, T x, int[] positions, List<Segment> segments,
                                List<KvCache<T>> requestCaches, Scratch<T> s) {
        ops.rmsNorm(x, w.attentionNorm(), config.rmsNormEps(), s.normed);
        ops.linear(s.normed, w.wq(), s.q);
        ops.linear(s.normed, w.wk(), s.k);
        ops.linear(s.normed, w.wv(), s.v);
        if (w.hasQkvBias()) {
            ops.addBias(s.q, w.bq());
            ops.addBias(s.k, w.bk());
            ops.addBias(s.v, w.bv());
        }
        ops.rope(s.q, positions, config.headDim(), config.ropeTheta());
        ops.rope(s.k, positions, config.headDim(), config.ropeTheta());
        int row = 0;
        for (int i = 0; i < segments.size(); i++) {
            Segment segment = segments.get(i);
            KvCache<T> cache = requestCaches.get(i);
            int end = row + segment.length();
            cache.write(l, segment.startPosition(), ops.rowSlice(s.k, row, end), ops.rowSlice(s.v, row, end));
            ops.attention(ops.rowSlice(s.q, row, end), cache.keys(l), cache.values(l), Arrays.copyOfRange(positions, row, end),
                    tp.headsPerRank(), tp.kvHeadsPerRank(), config.headDim(), ops.rowSlice(s.attended, row, end));
            row = end;
        }
        ops.linear(s.attended, w.wo(), s.projected);
        comm.allReduceSum(s.projected);
        if (w.bo() != null) {
            ops.addBias(s.projected, w.bo());
        }
        ops.add(x, s.projected, x);
    }

    private void feedForwardBlock(LayerWeights<T> w, T x, Scratch<T> s) {
        ops.rmsNorm(x, w.ffnNorm(), config.rmsNormEps(), s.normed);
        ops.linear(s.normed, w.wGate(), s.gate);
        ops.linear(s.normed, w.wUp(), s.up);
        ops.siluMul(s.gate, s.up, s.gate);
        ops.linear(s.gate, w.wDown(), s.projected);
        comm.allReduceSum(s.projected);
        ops.add(x, s.projected, x);
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

    private List<KvCache<T>> reserveCaches(List<Segment> segments) {
        List<KvCache<T>> result = new ArrayList<>(segments.size());
        for (Segment segment : segments) {
            KvCache<T> cache = caches.get(segment.requestId());
            if (cache == null) {
                if (segment.startPosition() != 0) {
                    throw new GraphlaneException(weights.stage() + " rank " + comm.rank() + ": request " + segment.requestId()
                            + " is unknown here but starts at position " + segment.startPosition() + " (a request starts at 0)");
                }
                cache = new KvCache<>(ops, segment.requestId(), weights.layers().size(), tp.kvHeadsPerRank() * config.headDim(),
                        config.maxPositions());
                caches.put(segment.requestId(), cache);
            }
            cache.reserve(segment.startPosition(), segment.length());
            result.add(cache);
        }
        return result;
    }

    private static int[] positionsOf(List<Segment> segments) {
        int total = segments.stream().mapToInt(Segment::length).sum();
        int[] positions = new int[total];
        int row = 0;
        for (Segment segment : segments) {
            for (int i = 0; i < segment.length(); i++) {
                positions[row++] = segment.startPosition() + i;
            }
        }
        return positions;
    }

    /** The step's working tensors at this rank's widths, allocated once and reused by every layer. */
    private static final class Scratch<T> {
        private final NeuralOps<T> ops;
        final T normed;
        final T q;
        final T k;
        final T v;
        final T attended;
        final T projected;
        final T gate;
        final T up;

        Scratch(NeuralOps<T> ops, LlamaConfig c, TensorParallelism tp, int n) {
            this.ops = ops;
            int qw = tp.headsPerRank() * c.headDim();
            int kvw = tp.kvHeadsPerRank() * c.headDim();
            int mlp = c.intermediateSize() / tp.size();
            this.normed = ops.allocate(n, c.hiddenSize());
            this.q = ops.allocate(n, qw);
            this.k = ops.allocate(n, kvw);
            this.v = ops.allocate(n, kvw);
            this.attended = ops.allocate(n, qw);
            this.projected = ops.allocate(n, c.hiddenSize());
            this.gate = ops.allocate(n, mlp);
            this.up = ops.allocate(n, mlp);
        }

        void release() {
            for (T t : List.of(normed, q, k, v, attended, projected, gate, up)) {
                ops.release(t);
            }
        }
    }
}
