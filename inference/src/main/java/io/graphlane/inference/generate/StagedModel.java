package io.graphlane.inference.generate;

import io.graphlane.core.nn.NeuralOps;
import io.graphlane.inference.llama.LlamaConfig;
import io.graphlane.inference.llama.LlamaStage;
import io.graphlane.inference.llama.Segment;
import io.graphlane.inference.llama.StageForward;
import io.graphlane.inference.llama.StageInput;
import io.graphlane.inference.llama.StageOutput;
import java.util.List;
import java.util.Objects;

/**
 * A model's stages run one after another on the calling thread: stage k's activation goes
 * straight to stage k+1 and is freed after it. This is the reference a pipelined run must
 * equal, and the simplest way to get logits. Not thread-safe.
 *
 * @param <T> the backend tensor
 */
public final class StagedModel<T> implements AutoCloseable {
    private final List<LlamaStage<T>> stages;
    private final Runnable releaseWeights;
    private boolean closed;

    /** The stages of one model, in pipeline order, all issuing through the same thread; their weights are the caller's. */
    public StagedModel(List<LlamaStage<T>> stages) {
        this(stages, () -> { });
    }

    /**
     * The stages of one model, in pipeline order, all issuing through the same thread; {@link #close} runs
     * {@code releaseWeights} once, after freeing the stages' caches (whoever loaded the weights releases them there).
     */
    public StagedModel(List<LlamaStage<T>> stages, Runnable releaseWeights) {
        if (stages.isEmpty()) {
            throw new IllegalArgumentException("a model needs at least one stage");
        }
        this.stages = List.copyOf(stages);
        this.releaseWeights = Objects.requireNonNull(releaseWeights, "releaseWeights");
    }

    /** The model configuration. */
    public LlamaConfig config() {
        return stages.get(0).config();
    }

    /** The stages, in pipeline order. */
    public List<LlamaStage<T>> stages() {
        return stages;
    }

    /**
     * Runs one step of {@code segments} with their token ids through every stage and returns, per
     * segment, the logits at its last position.
     */
    public float[][] step(List<Segment> segments, int[] tokenIds) {
        return step(stages, segments, tokenIds);
    }

    /**
     * Runs one step of {@code segments} with their token ids through {@code stages} in order (whatever each stage is
     * inside: one lane or tensor-parallel shards) on the calling thread and returns, per segment, the logits at its last
     * position; each activation is freed once the next stage has read it.
     */
    public static <T> float[][] step(List<? extends StageForward<T>> stages, List<Segment> segments, int[] tokenIds) {
        if (stages.isEmpty()) {
            throw new IllegalArgumentException("a model needs at least one stage");
        }
        StageInput<T> input = new StageInput.Tokens<>(segments, tokenIds);
        StageOutput<T> output = null;
        NeuralOps<T> outputOps = null;
        for (StageForward<T> stage : stages) {
            StageOutput<T> next;
            try {
                next = stage.forward(input);
            } finally {
                if (output != null) {
                    outputOps.release(output.tensor());
                }
            }
            output = next;
            outputOps = stage.ops();
            if (output instanceof StageOutput.Hidden<T> hidden) {
                input = new StageInput.Hidden<>(segments, hidden.activation());
            }
        }
        T logits = output.tensor();
        try {
            int vocab = outputOps.cols(logits);
            float[] all = new float[segments.size() * vocab];
            outputOps.toHost(logits, all);
            float[][] perSegment = new float[segments.size()][];
            for (int i = 0; i < segments.size(); i++) {
                perSegment[i] = java.util.Arrays.copyOfRange(all, i * vocab, (i + 1) * vocab);
            }
            return perSegment;
        } finally {
            outputOps.release(logits);
        }
    }

    /** Frees {@code requestId}'s KV caches in every stage. */
    public void endRequest(long requestId) {
        for (LlamaStage<T> stage : stages) {
            stage.endRequest(requestId);
        }
    }

    /** Frees every stage's KV caches, then releases the weights if this model was given a way to; idempotent. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            for (LlamaStage<T> stage : stages) {
                stage.close();
            }
        } finally {
            releaseWeights.run();
        }
    }
}
