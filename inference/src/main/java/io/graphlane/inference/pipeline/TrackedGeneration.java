package io.graphlane.inference.pipeline;

import io.graphlane.inference.api.FinishReason;
import io.graphlane.inference.api.Generation;
import io.graphlane.inference.api.GenerationListener;
import io.graphlane.inference.api.GenerationResult;
import io.graphlane.scheduler.pipeline.SampledToken;
import io.graphlane.scheduler.pipeline.TokenListener;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.LongConsumer;

/**
 * One request as its caller sees it: forwards an engine's tokens to the caller's listener, collects
 * them into the result, and cancels through the engine that runs it. Engines call it from one thread.
 */
public final class TrackedGeneration implements TokenListener, Generation {
    private final List<Integer> prompt;
    private final GenerationListener listener;
    private final List<Integer> generated = new ArrayList<>();
    private final CompletableFuture<GenerationResult> result = new CompletableFuture<>();
    private volatile long id = -1;
    private volatile LongConsumer canceller = ignored -> { };

    public TrackedGeneration(List<Integer> prompt, GenerationListener listener) {
        this.prompt = List.copyOf(prompt);
        this.listener = listener;
    }

    /** Names the request once its engine admitted it, and how to cancel it there. */
    public TrackedGeneration bind(long requestId, LongConsumer cancel) {
        this.id = requestId;
        this.canceller = cancel;
        return this;
    }

    @Override
    public void onToken(int tokenId) {
        onToken(SampledToken.of(tokenId));
    }

    @Override
    public void onToken(SampledToken token) {
        generated.add(token.id());
        listener.onToken(token);
    }

    @Override
    public void onFinished(StopReason reason) {
        FinishReason r = reason == StopReason.END_OF_SEQUENCE ? FinishReason.STOP : FinishReason.LENGTH;
        listener.onFinished(r);
        result.complete(new GenerationResult(prompt, List.copyOf(generated), r));
    }

    @Override
    public void onFailed(Throwable cause) {
        listener.onFailed(cause);
        result.completeExceptionally(cause);
    }

    @Override
    public String id() {
        return Long.toString(id);
    }

    @Override
    public void cancel() {
        if (id >= 0 && !result.isDone()) {
            canceller.accept(id);
        }
    }

    @Override
    public CompletionStage<GenerationResult> result() {
        return result;
    }
}
