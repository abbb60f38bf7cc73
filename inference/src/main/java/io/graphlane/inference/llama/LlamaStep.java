package io.graphlane.inference.llama;

import io.graphlane.core.GraphlaneException;
import io.graphlane.core.nn.NeuralOps;
import java.util.List;
import java.util.function.IntFunction;

/**
 * One step of a {@link LlamaStage} over a micro-batch, in parts: {@link #begin} takes the input (the embedding of the
 * tokens, or the previous stage's activation) into the residual stream, {@link #layers} runs a range of the stage's
 * layers with the weights it is handed, {@link #finish} makes the output and commits the KV caches. A stage whose
 * layers are all resident runs {@link #allLayers} (each residual add fused into the next norm); a stage that streams
 * layers runs each range as a work of its own, after the promotion of the weights it reads. The parts run in order on
 * the stage's lane. If the step fails or is abandoned before {@link #finish}, no cache advances, and {@link #close}
 * frees the residual stream (unless the stage keeps it).
 *
 * @param <T> the backend tensor
 */
public final class LlamaStep<T> implements AutoCloseable {
    private final LlamaStage<T> stage;
    private final List<Segment> segments;
    private final List<KvCache<T>> caches;
    private final int[] positions;
    private final T x;
    private final boolean last;
    private boolean handedOn;
    private boolean closed;

    private LlamaStep(LlamaStage<T> stage, List<Segment> segments, List<KvCache<T>> caches, int[] positions, T x, boolean last) {
        this.stage = stage;
        this.segments = segments;
        this.caches = caches;
        this.positions = positions;
        this.x = x;
        this.last = last;
    }

    /** Checks {@code input} against the stage, reserves the caches and takes the input into the residual stream. */
    static <T> LlamaStep<T> begin(LlamaStage<T> stage, StageInput<T> input) {
        stage.requireInputMatchesStage(input);
        NeuralOps<T> ops = stage.ops();
        LlamaConfig config = stage.config();
        // where a segment restarts from position 0 (LlamaConfig#restarted), its cached positions are computed again
        List<Segment> segments = stage.restarts.segments(input.segments());
        CacheRestarts.forgetRestarted(input.segments(), segments, stage.caches);
        int[] tokenIds = input instanceof StageInput.Tokens<T> t
                ? stage.restarts.tokens(input.segments(), segments, t.tokenIds(), stage.spec().toString()) : null;
        if (input instanceof StageInput.Hidden<T> hidden && ops.rows(hidden.activation()) != RequestCaches.positionsOf(segments).length) {
            throw new GraphlaneException(stage.spec() + ": activation should have " + RequestCaches.positionsOf(segments).length
                    + " rows for the step's segments, but has " + ops.rows(hidden.activation()));
        }
        List<KvCache<T>> caches = stage.caches.reserve(segments);
        int[] positions = RequestCaches.positionsOf(segments);
        boolean last = stage.spec().isLast();
        T x = last ? stage.residual.rows(positions.length) : ops.allocate(positions.length, config.hiddenSize());
        LlamaStep<T> step = new LlamaStep<>(stage, segments, caches, positions, x, last);
        try {
            stage.scratch = stage.scratch == null ? stage.layers.scratch(positions.length) : stage.scratch.fit(positions.length);
            if (tokenIds != null) {
                stage.layers.embed(stage.weights().embedding(), tokenIds, x);
            } else {
                ops.copy(((StageInput.Hidden<T>) input).activation(), x);
            }
            return step;
        } catch (RuntimeException | Error e) {
            step.close();
            throw e;
        }
    }

    /** Every layer of the stage with its own weights, each residual add fused into the next norm. */
    public void allLayers() {
        stage.layers.layers(stage.weights().layers(), x, positions, segments, caches, stage.scratch);
    }

    /** Stage-local layers {@code [from, to)}, layer {@code l} reading {@code weights.apply(l)}. */
    public void layers(int from, int to, IntFunction<LayerWeights<T>> weights) {
        for (int l = from; l < to; l++) {
            LayerWeights<T> w = weights.apply(l);
            stage.layers.attention(l, w, x, positions, segments, caches, stage.scratch);
            stage.layers.feedForward(w, x, stage.scratch);
        }
    }

    /** The stage's output (the next stage's activation, or the logits), with every cache advanced by its segment. */
    public StageOutput<T> finish() {
        StageOutput<T> output;
        if (last) {
            output = new StageOutput.Logits<>(segments, stage.head(x, segments));
        } else {
            output = new StageOutput.Hidden<>(segments, x);
            handedOn = true;
        }
        for (int i = 0; i < segments.size(); i++) {
            caches.get(i).commit(segments.get(i).length());
        }
        stage.caches.publishUsage();
        return output;
    }

    /** Frees the residual stream unless it was handed on or the stage keeps it; idempotent. */
    @Override
    public void close() {
        if (!closed) {
            closed = true;
            if (!last && !handedOn) {
                stage.ops().release(x);
            }
        }
    }
}
