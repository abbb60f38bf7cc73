package io.graphlane.scheduler.graph;

import java.util.concurrent.CompletionStage;
import org.apache.pekko.actor.typed.ActorRef;

/** A started graph run: its request id, its result, and a way to cancel it. */
public final class GraphRun {
    private final long requestId;
    private final CompletionStage<GraphResult> result;
    private final ActorRef<GraphRunActor.Command> actor;

    GraphRun(long requestId, CompletionStage<GraphResult> result, ActorRef<GraphRunActor.Command> actor) {
        this.requestId = requestId;
        this.result = result;
        this.actor = actor;
    }

    /** The request id the run uses on every lane. */
    public long requestId() {
        return requestId;
    }

    /**
     * Completes once every node is terminal (after the exact completion of everything submitted),
     * with the request's state and every node's outcome; never fails for a node's failure.
     */
    public CompletionStage<GraphResult> result() {
        return result;
    }

    /**
     * Cancels the run: nodes not yet sent are dropped, queued ones are dropped by their lanes, and
     * submitted ones are abandoned (held until their exact completion, outcome unpublished). The
     * result then completes as {@link RequestState#CANCELLED}. Has no effect once the run has ended.
     */
    public void cancel() {
        actor.tell(GraphRunActor.CancelRun.INSTANCE);
    }
}
