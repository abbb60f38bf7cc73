package io.graphlane.inference.llama;

import io.graphlane.backend.cpu.nn.CpuNeuralOps;
import io.graphlane.backend.cpu.nn.CpuTensor;
import io.graphlane.checkpoint.config.RopeConfig;
import io.graphlane.core.nn.NeuralOps;
import io.graphlane.core.nn.RotaryTable;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * The two blocks of a Llama decoder layer over one set of heads, shared by a whole stage
 * ({@link LlamaStage}) and by a tensor-parallel shard of one (which holds some of the heads and
 * intermediate columns and sums the partial output projections across its group):
 *
 * <pre>
 *   h = rmsnorm(x);  q, k, v = h·Wqᵀ (+bq), h·Wkᵀ (+bk), h·Wvᵀ (+bv);  (q, k = headnorm(q), headnorm(k));
 *   q, k = rope(q), rope(k);  cache ← k, v
 *   x = x + reduce(attention(q, cache, window of the layer)·Woᵀ) (+bo)
 *   h = rmsnorm(x);  x = x + reduce((act(h·Wgateᵀ (+bgate)) · (h·Wupᵀ (+bup)))·Wdownᵀ) (+bdown)
 * </pre>
 *
 * RoPE uses the config's rotary table; where it depends on the forward's sequence length ({@code dynamic},
 * {@code longrope}) each segment (one request's rows) is rotated with the table of its own length, as transformers
 * recomputes the frequencies per forward pass; the keys already cached keep the rotation they were written with.
 *
 * <p>A layer with a sliding window ({@link LlamaConfig#attentionWindow}) attends, at position {@code i}, to the
 * positions {@code j} with {@code i - j < window} only; its cache still holds every position.
 *
 * <p>Gemma 2 and 3 ({@link LlamaConfig#gemma}) change the layer as transformers' {@code Gemma2DecoderLayer} does: every
 * RMSNorm scales by {@code 1 + w}; the embeddings are multiplied by {@code sqrt(hidden)} ({@link #embed}); the scores
 * are scaled by {@code 1/sqrt(query_pre_attn_scalar)} and soft-capped ({@code c · tanh(s / c)}) before the softmax;
 * the sliding layers rotate with their own RoPE (Gemma 3's local base); each block's output is normed before the
 * residual add, after the tensor-parallel reduce and the output bias ({@link #closeBlock}):
 * <pre>
 *   x = x + postAttnNorm(attention(inputNorm(x)));  x = x + postFfnNorm(mlp(preFfnNorm(x)))
 * </pre>
 * and the logits are soft-capped by {@code final_logit_softcapping} ({@link #head}).
 *
 * @param <T> the backend tensor
 */
public final class DecoderLayers<T> {
    private final NeuralOps<T> ops;
    private final LlamaConfig config;
    /** The model's index of this stage's first layer: stage-local layer {@code l} is the model's {@code firstLayer + l}. */
    private final int firstLayer;
    private final int headCount;
    private final int kvHeadCount;
    private final int intermediateWidth;
    private final Consumer<T> reduceProjection;
    /** {@link #ops} when they are the CPU's: projections that share their input then run in one pass of its threads. */
    private final CpuNeuralOps cpuOps;
    /** Per model layer, the rotary table of every forward pass, unless it depends on the sequence length (then null). */
    private final RotaryTable[] fixedRotary;
    /** The offset on every norm weight: 1 for Gemma's {@code 1 + w}, else 0. */
    private final float normOffset;
    /** The sparse block of a mixture-of-experts model's sparse layers, or null for a dense model. */
    private final MoeBlock<T> moe;

    /**
     * Blocks over {@code headCount} query heads, {@code kvHeadCount} key/value heads and {@code intermediateWidth}
     * MLP columns; {@code reduceProjection} turns a partial output projection into the full one in place (identity for
     * a whole stage, an all-reduce sum for a shard). {@code firstLayer} is the model's index of the stage's first layer,
     * which places each stage-local layer in the config's per-layer attention windows.
     */
    public DecoderLayers(NeuralOps<T> ops, LlamaConfig config, int firstLayer, int headCount, int kvHeadCount, int intermediateWidth,
                         Consumer<T> reduceProjection) {
        this(ops, config, firstLayer, headCount, kvHeadCount, intermediateWidth, reduceProjection,
                config.moe() == null ? null : MoeBlock.local(ops, config));
    }

    /**
     * Blocks as {@link #DecoderLayers(NeuralOps, LlamaConfig, int, int, int, int, Consumer)} whose sparse layers run
     * through {@code moe} (its experts placed where its runner puts them) instead of all here.
     */
    public DecoderLayers(NeuralOps<T> ops, LlamaConfig config, int firstLayer, MoeBlock<T> moe) {
        this(ops, config, firstLayer, config.headCount(), config.kvHeadCount(), config.intermediateSize(), t -> { },
                java.util.Objects.requireNonNull(moe, "moe"));
    }

    private DecoderLayers(NeuralOps<T> ops, LlamaConfig config, int firstLayer, int headCount, int kvHeadCount, int intermediateWidth,
                          Consumer<T> reduceProjection, MoeBlock<T> moe) {
        if (firstLayer < 0 || firstLayer > config.layerCount()) {
            throw new IllegalArgumentException("first layer " + firstLayer + " is outside the model's " + config.layerCount() + " layers");
        }
        this.ops = ops;
        this.config = config;
        this.firstLayer = firstLayer;
        this.headCount = headCount;
        this.kvHeadCount = kvHeadCount;
        this.intermediateWidth = intermediateWidth;
        this.reduceProjection = reduceProjection;
        this.cpuOps = ops instanceof CpuNeuralOps cpu ? cpu : null;
        this.fixedRotary = new RotaryTable[config.layerCount()];
        Map<RopeConfig, RotaryTable> tables = new HashMap<>();
        for (int layer = 0; layer < config.layerCount(); layer++) {
            RopeConfig rope = config.rope(layer);
            if (!rope.dependsOnLength()) {
                fixedRotary[layer] = tables.computeIfAbsent(rope, r -> r.table(config.headDim(), config.maxPositions()));
            }
        }
        this.normOffset = config.normWeightOffset();
        this.moe = moe;
    }

    /** Blocks over every head and column of {@code config}: a whole stage, whose first layer is the model's {@code firstLayer}. */
    public static <T> DecoderLayers<T> whole(NeuralOps<T> ops, LlamaConfig config, int firstLayer) {
        return new DecoderLayers<>(ops, config, firstLayer, config.headCount(), config.kvHeadCount(), config.intermediateSize(), t -> { });
    }

    /**
     * Scratch tensors for a step of {@code rows} positions; {@link Scratch#fit} reuses them for a later step, and
     * {@link Scratch#release()} frees them.
     */
    public Scratch<T> scratch(int rows) {
        return new Scratch<>(ops, config.hiddenSize(), headCount * config.headDim(), kvHeadCount * config.headDim(),
                intermediateWidth).fit(rows);
    }

    /**
     * Every layer of {@code weights} in order, in place on {@code x}: the same as {@link #attention} then
     * {@link #feedForward} per layer, with each residual add fused into the norm that follows it.
     */
    public void layers(List<LayerWeights<T>> weights, T x, int[] positions, List<Segment> segments, List<KvCache<T>> caches,
                       Scratch<T> s) {
        if (weights.isEmpty()) {
            return;
        }
        ops.rmsNorm(x, weights.get(0).attentionNorm(), config.rmsNormEps(), normOffset, s.normed);
        for (int l = 0; l < weights.size(); l++) {
            LayerWeights<T> w = weights.get(l);
            attend(l, w, positions, segments, caches, s, s.projected);
            reduceProjection.accept(s.projected);
            closeBlock(w, true, s.projected);
            ops.addRmsNorm(x, s.projected, w.ffnNorm(), config.rmsNormEps(), normOffset, s.normed);
            try {
                mlp(w, s, s.projected);
            } catch (ExpertRankFailedException e) {
                throw e.withRequests(requestsOf(e.rows(), segments));
            }
            reduceProjection.accept(s.projected);
            closeBlock(w, false, s.projected);
            if (l + 1 < weights.size()) {
                ops.addRmsNorm(x, s.projected, weights.get(l + 1).attentionNorm(), config.rmsNormEps(), normOffset, s.normed);
            } else {
                ops.add(x, s.projected, x);
            }
        }
    }

    /** The requests of {@code segments} (in row order) that rows {@code rows} of the step belong to. */
    private static java.util.Set<Long> requestsOf(int[] rows, List<Segment> segments) {
        java.util.Set<Long> out = new java.util.TreeSet<>();
        for (int row : rows) {
            int from = 0;
            for (Segment segment : segments) {
                if (row < from + segment.length()) {
                    out.add(segment.requestId());
                    break;
                }
                from += segment.length();
            }
        }
        return out;
    }

    /** The attention block of stage-local layer {@code l}, in place on {@code x}; writes each segment's keys and values to its cache. */
    public void attention(int l, LayerWeights<T> w, T x, int[] positions, List<Segment> segments, List<KvCache<T>> caches,
                          Scratch<T> s) {
        attentionPartial(l, w, x, positions, segments, caches, s, s.projected);
        reduceProjection.accept(s.projected);
        closeBlock(w, true, s.projected);
        ops.add(x, s.projected, x);
    }

    /**
     * The attention block of layer {@code l} up to its output projection, which it writes to {@code partial} (this set of
     * heads' share of it, without the bias) instead of adding it to {@code x}; writes each segment's keys and values to its cache.
     */
    public void attentionPartial(int l, LayerWeights<T> w, T x, int[] positions, List<Segment> segments, List<KvCache<T>> caches,
                                 Scratch<T> s, T partial) {
        ops.rmsNorm(x, w.attentionNorm(), config.rmsNormEps(), normOffset, s.normed);
        attend(l, w, positions, segments, caches, s, partial);
    }

    /** The SwiGLU MLP block, in place on {@code x}. */
    public void feedForward(LayerWeights<T> w, T x, Scratch<T> s) {
        feedForwardPartial(w, x, s, s.projected);
        reduceProjection.accept(s.projected);
        closeBlock(w, false, s.projected);
        ops.add(x, s.projected, x);
    }

    /**
     * What follows a block's reduced output projection {@code sum} before the residual add, in place: the output bias
     * ({@code bo} of the attention block, {@code bDown} of the MLP's), then Gemma's norm of the block's output
     * ({@code post_attention_layernorm}, {@code post_feedforward_layernorm}).
     */
    public void closeBlock(LayerWeights<T> w, boolean attentionBlock, T sum) {
        T bias = attentionBlock ? w.bo() : w.bDown();
        if (bias != null) {
            ops.addBias(sum, bias);
        }
        T norm = attentionBlock ? w.postAttentionNorm() : w.postFfnNorm();
        if (norm != null) {
            ops.rmsNorm(sum, norm, config.rmsNormEps(), normOffset, sum);
        }
    }

    /** The token embeddings of {@code tokenIds} from {@code table} into {@code out}, times Gemma's {@code sqrt(hidden)}. */
    public void embed(T table, int[] tokenIds, T out) {
        ops.embedding(table, tokenIds, out);
        if (config.embeddingScale() != 1f) {
            ops.scale(out, config.embeddingScale());
        }
    }

    /**
     * The gated MLP block up to its down projection, which it writes to {@code partial} (these columns' share of it, without
     * the down projection's bias) instead of adding it to {@code x}.
     */
    public void feedForwardPartial(LayerWeights<T> w, T x, Scratch<T> s, T partial) {
        ops.rmsNorm(x, w.ffnNorm(), config.rmsNormEps(), normOffset, s.normed);
        mlp(w, s, partial);
    }

    /** Attention from the normed input {@code s.normed} to this set of heads' output projection in {@code partial} (no reduce, no bias). */
    private void attend(int l, LayerWeights<T> w, int[] positions, List<Segment> segments, List<KvCache<T>> caches, Scratch<T> s,
                        T partial) {
        if (cpuOps != null) {
            cpuOps.linearAll((CpuTensor) s.normed, new CpuTensor[] {(CpuTensor) w.wq(), (CpuTensor) w.wk(), (CpuTensor) w.wv()},
                    new CpuTensor[] {(CpuTensor) s.q, (CpuTensor) s.k, (CpuTensor) s.v});
        } else {
            ops.linear(s.normed, w.wq(), s.q);
            ops.linear(s.normed, w.wk(), s.k);
            ops.linear(s.normed, w.wv(), s.v);
        }
        if (w.hasQkvBias()) {
            ops.addBias(s.q, w.bq());
            ops.addBias(s.k, w.bk());
            ops.addBias(s.v, w.bv());
        }
        if (w.qNorm() != null) {
            ops.rmsNormHeads(s.q, w.qNorm(), config.rmsNormEps(), config.headDim(), normOffset);
            ops.rmsNormHeads(s.k, w.kNorm(), config.rmsNormEps(), config.headDim(), normOffset);
        }
        RotaryTable fixed = fixedRotary[firstLayer + l];
        if (fixed != null) {
            ops.ropeQk(s.q, s.k, positions, config.headDim(), fixed);
        } else {
            int from = 0;
            for (Segment segment : segments) {
                int to = from + segment.length();
                ops.ropeQk(ops.rowSlice(s.q, from, to), ops.rowSlice(s.k, from, to), Arrays.copyOfRange(positions, from, to),
                        config.headDim(), config.rotaryTable(firstLayer + l, segment.startPosition() + segment.length()));
                from = to;
            }
        }
        int window = config.attentionWindow(firstLayer + l);
        int row = 0;
        for (int i = 0; i < segments.size(); i++) {
            Segment segment = segments.get(i);
            KvCache<T> cache = caches.get(i);
            int end = row + segment.length();
            cache.write(l, segment.startPosition(), ops.rowSlice(s.k, row, end), ops.rowSlice(s.v, row, end));
            ops.attention(ops.rowSlice(s.q, row, end), cache.keys(l), cache.values(l), Arrays.copyOfRange(positions, row, end),
                    headCount, kvHeadCount, config.headDim(), window, config.attentionScale(), config.attentionSoftcap(),
                    ops.rowSlice(s.attended, row, end));
            row = end;
        }
        ops.linear(s.attended, w.wo(), partial);
    }

    /** The gated MLP from the normed input {@code s.normed} to these columns' down projection in {@code partial} (no reduce, no down bias). */
    private void mlp(LayerWeights<T> w, Scratch<T> s, T partial) {
        if (w.moe() != null) {
            if (moe == null) {
                throw new IllegalStateException("layer " + w.moe().layer() + " holds experts, but the config has no mixture of experts");
            }
            moe.forward(w.moe(), s.normed, partial);
            return;
        }
        if (cpuOps != null) {
            cpuOps.linearAll((CpuTensor) s.normed, new CpuTensor[] {(CpuTensor) w.wGate(), (CpuTensor) w.wUp()},
                    new CpuTensor[] {(CpuTensor) s.gate, (CpuTensor) s.up});
        } else {
            ops.linear(s.normed, w.wGate(), s.gate);
            ops.linear(s.normed, w.wUp(), s.up);
        }
        if (w.bGate() != null) {
            ops.addBias(s.gate, w.bGate());
            ops.addBias(s.up, w.bUp());
        }
        ops.gatedMul(s.gate, s.up, s.gate, config.activation());
        ops.linear(s.gate, w.wDown(), partial);
    }

    /**
     * The intermediate tensors of one step: views of buffers kept from step to step, which grow only when a step
     * has more rows than any before.
     */
    public static final class Scratch<T> {
        private final List<RowBuffer<T>> buffers;
        private final RowBuffer<T> normedRows;
        private final RowBuffer<T> qRows;
        private final RowBuffer<T> kRows;
        private final RowBuffer<T> vRows;
        private final RowBuffer<T> attendedRows;
        private final RowBuffer<T> projectedRows;
        private final RowBuffer<T> gateRows;
        private final RowBuffer<T> upRows;
        T normed;
        T q;
        T k;
        T v;
        T attended;
        T projected;
        T gate;
        T up;

        Scratch(NeuralOps<T> ops, int hidden, int queryWidth, int kvWidth, int intermediate) {
            this.normedRows = new RowBuffer<>(ops, hidden);
            this.qRows = new RowBuffer<>(ops, queryWidth);
            this.kRows = new RowBuffer<>(ops, kvWidth);
            this.vRows = new RowBuffer<>(ops, kvWidth);
            this.attendedRows = new RowBuffer<>(ops, queryWidth);
            this.projectedRows = new RowBuffer<>(ops, hidden);
            this.gateRows = new RowBuffer<>(ops, intermediate);
            this.upRows = new RowBuffer<>(ops, intermediate);
            this.buffers = List.of(normedRows, qRows, kRows, vRows, attendedRows, projectedRows, gateRows, upRows);
        }

        /** Makes these tensors {@code rows} rows long for the next step, allocating only if no step before had as many. */
        public Scratch<T> fit(int rows) {
            normed = normedRows.rows(rows);
            q = qRows.rows(rows);
            k = kRows.rows(rows);
            v = vRows.rows(rows);
            attended = attendedRows.rows(rows);
            projected = projectedRows.rows(rows);
            gate = gateRows.rows(rows);
            up = upRows.rows(rows);
            return this;
        }

        /** Frees every scratch tensor. */
        public void release() {
            buffers.forEach(RowBuffer::release);
        }
    }

    /**
     * The final norm and the head at each segment's last position of {@code x}: those rows are gathered into
     * {@code last} (the caller's buffer of {@code segments.size()} rows, overwritten), normed in place with
     * {@code finalNorm}, and multiplied by {@code lmHead} into a new {@code segments × vocab} tensor owned by the caller
     * (soft-capped by Gemma's {@code final_logit_softcapping}).
     */
    public T head(T x, List<Segment> segments, T last, T finalNorm, T lmHead) {
        int row = 0;
        for (int i = 0; i < segments.size(); i++) {
            row += segments.get(i).length();
            ops.copy(ops.rowSlice(x, row - 1, row), ops.rowSlice(last, i, i + 1));
        }
        ops.rmsNorm(last, finalNorm, config.rmsNormEps(), normOffset, last);
        T logits = ops.allocate(segments.size(), config.vocabSize());
        ops.linear(last, lmHead, logits);
        if (config.finalSoftcap() > 0) {
            ops.softcap(logits, config.finalSoftcap());
        }
        return logits;
    }
}
