package io.graphlane.inference.pipeline;

import io.graphlane.inference.api.FinishReason;
import io.graphlane.inference.api.Generation;
import io.graphlane.inference.api.GenerationListener;
import io.graphlane.inference.api.GenerationRefusedException;
import io.graphlane.inference.api.GenerationResult;
import io.graphlane.scheduler.pipeline.EngineFinishReason;
import io.graphlane.scheduler.pipeline.EngineListener;
import io.graphlane.scheduler.pipeline.PipelineStoppedException;
import io.graphlane.scheduler.pipeline.SampledToken;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.LongConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One request as its caller sees it: forwards an engine's tokens to the caller's listener, collects
 * them into the result, and cancels through the engine that runs it. Engines call it from one thread.
 *
 * <p>The caller's listener never reaches the engine: if it throws on a token, this request fails with that
 * exception, is cancelled in its engine (its slot freed once its step in flight returns) and hears nothing more; an
 * exception on its end is logged. A stopped engine's failure reaches the caller as UNAVAILABLE.
 */
public final class TrackedGeneration implements EngineListener, Generation {
    private static final Logger LOG = LoggerFactory.getLogger(TrackedGeneration.class);

    private final List<Integer> prompt;
    private final GenerationListener listener;
    private final List<Integer> generated = new ArrayList<>();
    private final CompletableFuture<GenerationResult> result = new CompletableFuture<>();
    private volatile long id = -1;
    private volatile LongConsumer canceller = ignored -> { };
    /** Set when the caller's listener threw: the request is over for the caller and is cancelled in its engine. */
    private volatile boolean listenerFailed;

    public TrackedGeneration(List<Integer> prompt, GenerationListener listener) {
        this.prompt = List.copyOf(prompt);
        this.listener = listener;
    }

    /** Names the request once its engine admitted it, and how to cancel it there. */
    public TrackedGeneration bind(long requestId, LongConsumer cancel) {
        this.canceller = cancel;
        this.id = requestId;
        if (listenerFailed) {
            cancel.accept(requestId); // the listener threw before the request was named
        }
        return this;
    }

    @Override
    public void onToken(int tokenId) {
        onToken(SampledToken.of(tokenId));
    }

    @Override
    public void onToken(SampledToken token) {
        if (listenerFailed) {
            return;
        }
        generated.add(token.id());
        try {
            listener.onToken(token);
        } catch (RuntimeException thrown) {
            listenerFailed = true;
            LOG.warn("the listener of request {} failed on a token; the request is cancelled", id, thrown);
            result.completeExceptionally(thrown);
            long named = id;
            if (named >= 0) {
                canceller.accept(named);
            }
        }
    }

    @Override
    public void onFinished(EngineFinishReason reason) {
        if (listenerFailed) {
            return;
        }
        FinishReason r = reason == EngineFinishReason.END_OF_SEQUENCE ? FinishReason.STOP : FinishReason.LENGTH;
        try {
            listener.onFinished(r);
        } catch (RuntimeException thrown) {
            LOG.warn("the listener of request {} failed on its end ({})", id, r, thrown);
        }
        result.complete(new GenerationResult(prompt, List.copyOf(generated), r));
    }

    @Override
    public void onFailed(Throwable cause) {
        if (listenerFailed) {
            return;
        }
        Throwable reported = cause instanceof PipelineStoppedException
                ? new GenerationRefusedException(GenerationRefusedException.Reason.UNAVAILABLE, cause.getMessage())
                : cause;
        try {
            listener.onFailed(reported);
        } catch (RuntimeException thrown) {
            LOG.warn("the listener of request {} failed on its failure ({})", id, reported.toString(), thrown);
        }
        result.completeExceptionally(reported);
    }

    @Override
    public String id() {
        return Long.toString(id);
    }

    @Override
    public void cancel() {
        long named = id;
        if (named >= 0 && !result.isDone()) {
            canceller.accept(named);
        }
    }

    @Override
    public CompletionStage<GenerationResult> result() {
        return result;
    }
}
