package io.graphlane.scheduler.pipeline;

/**
 * A request's sampling state, carried with the request through the engine to the stage that samples: it chooses the
 * request's next token from the logits at its last position. One instance per request; the engine runs at most one
 * step of a request at a time, so its calls never overlap.
 */
public interface TokenSampler {
    /** The next token for {@code logits} (one value per vocabulary entry; not changed), recorded as generated. */
    SampledToken next(float[] logits);
}
