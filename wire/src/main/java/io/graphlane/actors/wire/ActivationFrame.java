package io.graphlane.actors.wire;

import io.graphlane.core.graph.CompletionHandle;
import java.util.Objects;

/**
 * An activation on its way from one pipeline stage to the next across nodes. {@code producer} identifies the
 * producing work (node, lane, sequence): the consumer orders after it by subscribing to the owning lane.
 *
 * @param producer the handle of the work that produced the activation
 * @param requestId the request the activation belongs to
 * @param step the decode step (0 for prefill)
 * @param activation the activation's values
 */
public record ActivationFrame(CompletionHandle producer, long requestId, int step, WireTensor activation) {
    /** Refuses null parts and negative steps. */
    public ActivationFrame {
        Objects.requireNonNull(producer, "producer");
        Objects.requireNonNull(activation, "activation of " + producer);
        if (step < 0) {
            throw new IllegalArgumentException("step of " + producer + " must be >= 0, got " + step);
        }
    }
}
