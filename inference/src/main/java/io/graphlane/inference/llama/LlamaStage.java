package io.graphlane.inference.llama;

import io.graphlane.core.GraphlaneException;
import io.graphlane.core.nn.NeuralOps;
import io.graphlane.inference.stage.StageSpec;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * One pipeline stage of a Llama-family decoder: its layers' forward pass over a micro-batch,
 * and the KV caches of every request it has seen. Stage 0 starts from token ids, the last stage
 * ends with the final norm and the head. Hugging Face semantics throughout:
 *
 * <pre>
 *   x  = embed(tokens)                                   (first stage)
 *   for each layer:
 *     h  = rmsnorm(x) ;  q, k, v = h·Wqᵀ (+bq), h·Wkᵀ (+bk), h·Wvᵀ (+bv)
 *     q, k = rope(q), rope(k) ;  cache ← k, v
 *     x  = x + attention(q, cache)·Woᵀ (+bo)
 *     h  = rmsnorm(x) ;  x = x + (silu(h·Wgateᵀ) · h·Wupᵀ)·Wdownᵀ
 *   logits = rmsnorm(x_last)·Wheadᵀ                      (last stage)
 * </pre>
 *
 * <p>Gemma 2 and 3 scale the embeddings by {@code sqrt(hidden)}, norm each block's output before the residual add, scale
 * every norm by {@code 1 + w} and soft-cap scores and logits: see {@link DecoderLayers}.
 *
 * <p>Not thread-safe: a stage belongs to one lane, and its forward runs as that lane's work.
 *
 * @param <T> the backend tensor
 */
public final class LlamaStage<T> implements StageForward<T> {
    private final LlamaConfig config;
    private final StageWeights<T> weights;
    private final NeuralOps<T> ops;
    final RequestCaches<T> caches;
    final DecoderLayers<T> layers;
    /** The step's intermediate tensors, kept from step to step (created by the first step, freed by {@link #close}). */
    DecoderLayers.Scratch<T> scratch;
    /** The residual stream of the last stage, which hands on logits instead and so can keep it. */
    final RowBuffer<T> residual;
    /** The last stage's rows at each segment's last position, for the head. */
    final RowBuffer<T> lastRows;
    /** The cache restart of a model that {@link LlamaConfig#restartsCache}: the segments a step runs as, the tokens kept. */
    final CacheRestarts restarts;

    /** A stage over loaded weights, issuing its operations through {@code ops}. */
    public LlamaStage(LlamaConfig config, StageWeights<T> weights, NeuralOps<T> ops) {
        this(config, weights, ops, null);
    }

    /**
     * A stage as {@link #LlamaStage(LlamaConfig, StageWeights, NeuralOps)} whose mixture-of-experts layers run through
     * {@code moe} (such as expert parallelism's lanes); {@code null} runs them here.
     */
    public LlamaStage(LlamaConfig config, StageWeights<T> weights, NeuralOps<T> ops, MoeBlock<T> moe) {
        this.config = config;
        this.weights = weights;
        this.ops = ops;
        this.layers = moe == null ? DecoderLayers.whole(ops, config, weights.stage().layers().start())
                : new DecoderLayers<>(ops, config, weights.stage().layers().start(), moe);
        this.caches = new RequestCaches<>(ops, weights.stage().toString(), weights.layers().size(), config.kvWidth(), config.maxPositions());
        this.residual = new RowBuffer<>(ops, config.hiddenSize());
        this.lastRows = new RowBuffer<>(ops, config.hiddenSize());
        this.restarts = new CacheRestarts(config);
    }

    /** The stage this instance runs. */
    public StageSpec spec() {
        return weights.stage();
    }

    /** The model configuration. */
    public LlamaConfig config() {
        return config;
    }

    /** The weights this stage reads (owned by whoever loaded them). */
    public StageWeights<T> weights() {
        return weights;
    }

    /** The operations this stage issues its work through. */
    @Override
    public NeuralOps<T> ops() {
        return ops;
    }

    /**
     * Runs this stage's layers over one micro-batch and returns the next stage's activation, or
     * on the last stage the logits at each segment's last position. The input is read, never
     * freed. Every request's positions must continue where its cache ends; if the step fails,
     * no cache advances. Once a step of as many rows has run (and while no cache has to grow), a
     * step allocates only the tensor it returns: its intermediate values live in buffers the stage keeps.
     */
    @Override
    public StageOutput<T> forward(StageInput<T> input) {
        try (LlamaStep<T> step = LlamaStep.begin(this, input)) {
            step.allLayers();
            return step.finish();
        }
    }

    /**
     * Starts a step that runs in parts ({@link LlamaStep}): the stage's input now, then its layers in ranges, each with
     * the weights it is given, then {@link LlamaStep#finish()}; for a stage whose layers are not all on the device.
     */
    public LlamaStep<T> begin(StageInput<T> input) {
        return LlamaStep.begin(this, input);
    }

    /** Frees the KV cache of {@code requestId} (finished, cancelled or failed); false if the stage holds none. */
    @Override
    public boolean endRequest(long requestId) {
        restarts.end(requestId);
        return caches.end(requestId);
    }

    /**
     * Forgets the positions of {@code requestId} from {@code position} on, so a step that failed on a later
     * stage can be run again from there; false if the stage holds no cache for the request.
     */
    @Override
    public boolean rewind(long requestId, int position) {
        return caches.rewind(requestId, position);
    }

    @Override
    public long kvCachePositions() {
        return caches.positionsInUse();
    }

    /** {@code layers × 2 × kv_heads × head_dim × 4} bytes: a key and a value row of each of the stage's layers, in F32. */
    @Override
    public long kvBytesPerPosition() {
        return caches.bytesPerPosition();
    }

    /** Positions the caches of {@code requestId} have room for now (at most what was reserved for it), 0 if none. */
    public int cachedCapacity(long requestId) {
        return caches.capacity(requestId);
    }

    /** The requests this stage holds KV caches for. */
    public Set<Long> cachedRequests() {
        return caches.requests();
    }

    /** Positions this stage has seen for {@code requestId}, 0 if none. */
    public int cachedPositions(long requestId) {
        return caches.length(requestId);
    }

    /** Frees every KV cache and the step buffers; the weights belong to whoever loaded them. */
    @Override
    public void close() {
        caches.releaseAll();
        if (scratch != null) {
            scratch.release();
            scratch = null;
        }
        residual.release();
        lastRows.release();
    }

    /** The final norm and the head at each segment's last position. */
    T head(T x, List<Segment> segments) {
        return layers.head(x, segments, lastRows.rows(segments.size()), weights.finalNorm(), weights.lmHead());
    }

    void requireInputMatchesStage(StageInput<T> input) {
        if (input.segments().isEmpty()) {
            throw new IllegalArgumentException(spec() + ": a step needs at least one segment");
        }
        if (spec().isFirst() != (input instanceof StageInput.Tokens)) {
            throw new GraphlaneException(spec() + (spec().isFirst() ? " starts from token ids" : " reads the previous stage's activation")
                    + ", got " + input.getClass().getSimpleName());
        }
        if (input instanceof StageInput.Tokens<T> tokens && tokens.tokenIds().length != input.positions()) {
            throw new GraphlaneException(spec() + ": " + input.positions() + " positions but " + tokens.tokenIds().length + " token ids");
        }
        if (input instanceof StageInput.Hidden<T> hidden
                && ((!config.restartsCache() && ops.rows(hidden.activation()) != input.positions())
                    || ops.cols(hidden.activation()) != config.hiddenSize())) {
            throw new GraphlaneException(spec() + ": activation should be " + input.positions() + " x " + config.hiddenSize()
                    + " but is " + ops.rows(hidden.activation()) + " x " + ops.cols(hidden.activation()));
        }
        Set<Long> seen = new HashSet<>();
        for (Segment s : input.segments()) {
            if (!seen.add(s.requestId())) {
                throw new GraphlaneException(spec() + ": request " + s.requestId() + " appears twice in one step");
            }
        }
    }
}
