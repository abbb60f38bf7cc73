package io.graphlane.cluster.pipeline;

import io.graphlane.actors.wire.WireTensor;
import io.graphlane.core.completion.Outcome;
import java.util.Objects;

/** What the stage hosts tell the engine on the serving node about one request's step. */
public sealed interface StageReply permits StageReply.StepDone, StageReply.StepFailed {

    /** The request this reply is about. */
    long requestId();

    /** The engine's step number of that request. */
    long step();

    /**
     * The last stage completed the step: {@code logits} is {@code 1 × vocab}, the logits at the step's last position,
     * copied out after the last stage's exact completion.
     */
    record StepDone(long requestId, long step, WireTensor logits) implements StageReply {
        /** Refuses missing logits. */
        public StepDone {
            Objects.requireNonNull(logits, "logits");
        }
    }

    /**
     * The step failed: the work of stage {@code stage} on node {@code node} failed (the root), and every stage after it
     * was poisoned and never ran. {@code failure} carries the root cause (a RemoteFailureException once it crossed nodes).
     */
    record StepFailed(long requestId, long step, int stage, String node, Outcome.Failed failure) implements StageReply {
        /** Refuses missing parts. */
        public StepFailed {
            Objects.requireNonNull(node, "node");
            Objects.requireNonNull(failure, "failure");
        }
    }
}
