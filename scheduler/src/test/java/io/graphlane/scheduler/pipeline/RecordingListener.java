package io.graphlane.scheduler.pipeline;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

/** Collects one request's tokens and its single end. */
final class RecordingListener implements EngineListener {
    final List<Integer> tokens = new CopyOnWriteArrayList<>();
    final CompletableFuture<EngineFinishReason> ended = new CompletableFuture<>();
    final AtomicInteger ends = new AtomicInteger();
    /** When positive, {@link #onToken} throws on this token (counted from 1), as a broken client listener would. */
    volatile int throwOnToken;

    @Override
    public void onToken(int tokenId) {
        if (ended.isDone()) {
            throw new AssertionError("token " + tokenId + " after the request ended");
        }
        tokens.add(tokenId);
        if (tokens.size() == throwOnToken) {
            throw new IllegalStateException("the client's queue is closed");
        }
    }

    @Override
    public void onFinished(EngineFinishReason reason) {
        ends.incrementAndGet();
        ended.complete(reason);
    }

    @Override
    public void onFailed(Throwable cause) {
        ends.incrementAndGet();
        ended.completeExceptionally(cause);
    }
}
