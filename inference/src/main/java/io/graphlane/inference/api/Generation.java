package io.graphlane.inference.api;

import java.util.concurrent.CompletionStage;

/** A generation in progress. */
public interface Generation {
    /** The request id graphlane assigned. */
    String id();

    /** Cancels cooperatively: queued work is dropped, running work finishes unobserved; the result fails with a cancellation. */
    void cancel();

    /** Completes with the result, or exceptionally with the failure, cancellation or deadline. */
    CompletionStage<GenerationResult> result();
}
