package io.graphlane.cluster.pipeline;

import io.graphlane.actors.wire.WireTensor;
import io.graphlane.core.completion.Outcome;
import java.util.Objects;

/** What a stage host answers the serving node about one batched step of one stage ({@link StageHost.Step}). */
public sealed interface StageReply permits StageReply.StepDone, StageReply.StepFailed {

    /** The step this reply answers, as the serving node numbered it. */
    long stepId();

    /**
     * The stage completed the step: {@code values} is the activation ({@code positions × hidden}) or, on the model's last
     * stage, the logits at each segment's last position ({@code segments × vocab}), copied out after the stage's work.
     */
    record StepDone(long stepId, WireTensor values) implements StageReply {
        /** Refuses missing values. */
        public StepDone {
            Objects.requireNonNull(values, "values");
        }
    }

    /**
     * The step failed on stage {@code stage} on node {@code node}, or was refused there before any work. {@code failure}
     * carries the cause (a RemoteFailureException once it crossed nodes).
     */
    record StepFailed(long stepId, int stage, String node, Outcome.Failed failure) implements StageReply {
        /** Refuses missing parts. */
        public StepFailed {
            Objects.requireNonNull(node, "node");
            Objects.requireNonNull(failure, "failure");
        }
    }
}
