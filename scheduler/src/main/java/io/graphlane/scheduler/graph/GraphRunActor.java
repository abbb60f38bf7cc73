package io.graphlane.scheduler.graph;

import io.graphlane.actors.lane.DeadlineExceededException;
import io.graphlane.actors.lane.LaneProtocol;
import io.graphlane.actors.lane.LaneProtocol.Finished;
import io.graphlane.actors.lane.LaneProtocol.LaneReply;
import io.graphlane.actors.lane.LaneProtocol.Rejected;
import io.graphlane.actors.lane.LaneProtocol.Submit;
import io.graphlane.actors.lane.LaneProtocol.SubmitBatch;
import io.graphlane.actors.lane.LaneProtocol.Submitted;
import io.graphlane.actors.lane.LaneRegistry;
import io.graphlane.actors.lane.LaneStoppedException;
import io.graphlane.actors.lane.Retained;
import io.graphlane.actors.lane.WorkCancelledException;
import io.graphlane.core.completion.Outcome;
import io.graphlane.core.graph.CompletionHandle;
import io.graphlane.core.graph.GraphNode;
import io.graphlane.core.graph.LaneId;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.Terminated;
import org.apache.pekko.actor.typed.javadsl.AbstractBehavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.Receive;

/**
 * One graph run (one request): sends each node to its lane's actor after the handles of its
 * producers, keeping at most {@code max-in-flight-per-lane} nodes outstanding per lane, and
 * collects every node's outcome. Each lane's nodes go out in topological order, so the run
 * always progresses. Completes the caller's future once every node is terminal, then stops.
 */
final class GraphRunActor<W> extends AbstractBehavior<GraphRunActor.Command> {

    /** What a run actor accepts. */
    sealed interface Command permits FromLane, CancelRun {
    }

    /** Replies from a lane. */
    record FromLane(LaneReply reply) implements Command {
    }

    /** The caller cancelled the run. */
    enum CancelRun implements Command { INSTANCE }

    static <W> Behavior<Command> create(CompiledGraph<W> graph, LaneRegistry registry, long requestId, long deadlineNanos,
                                        int window, CompletableFuture<GraphResult> result, Runnable onEnd) {
        return Behaviors.setup(ctx -> new GraphRunActor<>(ctx, graph, registry, requestId, deadlineNanos, window, result, onEnd).start());
    }

    private final CompiledGraph<W> graph;
    private final long requestId;
    private final long deadlineNanos;
    private final int window;
    private final CompletableFuture<GraphResult> result;
    private final Runnable onEnd;
    private final ActorRef<LaneReply> replies;
    private final List<ActorRef<LaneProtocol.Command>> laneRefs;
    private final LaneId[] laneIds;
    private final long base;
    private final int n;
    private final WorkState[] states;
    private final Throwable[] causes;
    private final String[] labels;
    private final CompletionHandle[] handles;
    private final int[] outstanding;
    private final int[] cursor;
    private final ArrayList<Submit<W>>[] outbox;
    private int terminal;
    private boolean cancelled;
    private boolean deadlineExceeded;
    private boolean refused;

    @SuppressWarnings("unchecked")
    private GraphRunActor(ActorContext<Command> context, CompiledGraph<W> graph, LaneRegistry registry, long requestId,
                          long deadlineNanos, int window, CompletableFuture<GraphResult> result, Runnable onEnd) {
        super(context);
        this.graph = graph;
        this.requestId = requestId;
        this.deadlineNanos = deadlineNanos;
        this.window = window;
        this.result = result;
        this.onEnd = onEnd;
        this.replies = context.messageAdapter(LaneReply.class, FromLane::new);
        this.n = graph.size();
        this.base = registry.reserveSequences(n);
        List<LaneId> lanes = graph.lanes();
        this.laneIds = lanes.toArray(LaneId[]::new);
        this.laneRefs = new ArrayList<>(lanes.size());
        for (LaneId l : lanes) {
            ActorRef<LaneProtocol.Command> ref = registry.lane(l);
            laneRefs.add(ref);
            // A lane that stops for good answers nothing sent to it afterwards: learn of it, or the run would wait forever.
            context.watch(ref);
        }
        this.states = new WorkState[n];
        Arrays.fill(states, WorkState.QUEUED);
        this.causes = new Throwable[n];
        this.labels = new String[n];
        this.handles = new CompletionHandle[n];
        this.outstanding = new int[lanes.size()];
        this.cursor = new int[lanes.size()];
        this.outbox = new ArrayList[lanes.size()];
        for (int l = 0; l < lanes.size(); l++) {
            outbox[l] = new ArrayList<>();
        }
    }

    private Behavior<Command> start() {
        for (int l = 0; l < laneIds.length; l++) {
            refill(l);
        }
        flush();
        return finishIfDone();
    }

    @Override
    public Receive<Command> createReceive() {
        return newReceiveBuilder()
                .onMessage(FromLane.class, this::onFromLane)
                .onMessageEquals(CancelRun.INSTANCE, this::onCancel)
                .onSignal(Terminated.class, this::onLaneTerminated)
                .build();
    }

    private Behavior<Command> onFromLane(FromLane m) {
        m.reply().forEach(this::apply);
        if (!cancelled && !refused) {
            for (int l = 0; l < laneIds.length; l++) {
                if (outstanding[l] < window && cursor[l] < graph.laneOrder[l].length) {
                    refill(l);
                }
            }
            flush();
        }
        return finishIfDone();
    }

    private Behavior<Command> onCancel() {
        if (!cancelled && terminal < n) {
            cancelled = true;
            abandonUnsent(i -> new WorkCancelledException(handle(i), requestId, false), WorkState.ABANDONED);
            cancelOnLanes();
        }
        return finishIfDone();
    }

    /**
     * A lane actor stopped. Everything it answered arrived before this signal, so the nodes it still
     * owes an answer were never taken in (their Submit reached a stopped actor): they fail, their
     * retained values are released here, and, as for a refusal, nothing more of the run is sent.
     */
    private Behavior<Command> onLaneTerminated(Terminated t) {
        int l = laneRefs.indexOf(t.getRef());
        if (l < 0) {
            return this;
        }
        for (int i = 0; i < n; i++) {
            if (graph.laneOf[i] == l && (states[i] == WorkState.PREPARED || states[i] == WorkState.SUBMITTED)) {
                outstanding[l]--;
                causes[i] = new LaneStoppedException(laneIds[l], "work " + graph.node(i).id());
                states[i] = WorkState.FAILED;
                terminal++;
                releaseRetained(i);
            }
        }
        if (!refused && !cancelled) {
            refused = true;
            abandonUnsent(j -> new LaneStoppedException(laneIds[l], "work " + graph.node(j).id()), WorkState.FAILED);
            cancelOnLanes();
        }
        return finishIfDone();
    }

    private void apply(LaneReply reply) {
        if (reply instanceof Finished f) {
            int i = index(f.handle());
            outstanding[graph.laneOf[i]]--;
            labels[i] = f.label();
            if (f.outcome() instanceof Outcome.Failed failed) {
                Throwable cause = failed.cause();
                causes[i] = cause;
                states[i] = GraphResult.isCancellation(cause) ? WorkState.ABANDONED : WorkState.FAILED;
                if (cause instanceof DeadlineExceededException) {
                    deadlineExceeded = true;
                }
            } else {
                states[i] = WorkState.COMMITTED;
            }
            terminal++;
        } else if (reply instanceof Submitted s) {
            int i = index(s.handle());
            labels[i] = s.label();
            if (states[i] == WorkState.PREPARED) {
                states[i] = WorkState.SUBMITTED;
            }
        } else if (reply instanceof Rejected r) {
            int i = index(r.handle());
            outstanding[graph.laneOf[i]]--;
            causes[i] = r.toException();
            states[i] = WorkState.FAILED;
            terminal++;
            if (!refused && !cancelled) {
                // Admission failed: the request cannot complete as a whole, so nothing more of it is sent.
                refused = true;
                abandonUnsent(j -> new WorkCancelledException(handle(j), requestId, false), WorkState.ABANDONED);
                cancelOnLanes();
            }
        }
    }

    /** Sends nodes of lane {@code l} while its window has room. */
    private void refill(int l) {
        int[] order = graph.laneOrder[l];
        while (outstanding[l] < window && cursor[l] < order.length) {
            int i = order[cursor[l]];
            if (states[i] != WorkState.QUEUED) {
                cursor[l]++;
                continue;
            }
            if (deadlineNanos != LaneProtocol.NO_DEADLINE) {
                long late = System.nanoTime() - deadlineNanos;
                if (late >= 0) {
                    deadlineExceeded = true;
                    abandonUnsent(j -> new DeadlineExceededException(graph.node(j).id(), late), WorkState.FAILED);
                    // Nodes already sent may wait on producers that now never will be: the lanes must drop them
                    // (and answer their subscriptions) or the run would wait forever.
                    cancelOnLanes();
                    return;
                }
            }
            cursor[l]++;
            outbox[l].add(prepare(i));
            states[i] = WorkState.PREPARED;
            outstanding[l]++;
        }
    }

    private Submit<W> prepare(int i) {
        GraphNode<W> node = graph.node(i);
        int[] ps = graph.producers[i];
        List<CompletionHandle> after;
        if (ps.length == 0) {
            after = List.of();
        } else if (ps.length == 1) {
            after = List.of(handle(ps[0]));
        } else {
            CompletionHandle[] hs = new CompletionHandle[ps.length];
            for (int k = 0; k < ps.length; k++) {
                hs[k] = handle(ps[k]);
            }
            after = List.of(hs);
        }
        return new Submit<>(handle(i), node.work(), after, node.retain(), requestId, deadlineNanos, graph.consumerCount[i], replies);
    }

    private void flush() {
        for (int l = 0; l < outbox.length; l++) {
            ArrayList<Submit<W>> out = outbox[l];
            if (out.isEmpty()) {
                continue;
            }
            if (out.size() == 1) {
                laneRefs.get(l).tell(out.get(0));
                out.clear();
            } else {
                laneRefs.get(l).tell(new SubmitBatch<>(out));
                outbox[l] = new ArrayList<>(out.size());
            }
        }
    }

    /**
     * Ends every node not yet sent to its lane. Its retained values were handed to this run and no
     * lane ever saw them, so they are released here (nothing of them was ever in flight).
     */
    private void abandonUnsent(java.util.function.IntFunction<Throwable> cause, WorkState as) {
        for (int i = 0; i < n; i++) {
            if (states[i] == WorkState.QUEUED) {
                states[i] = as;
                causes[i] = cause.apply(i);
                terminal++;
                releaseRetained(i);
            }
        }
    }

    private void releaseRetained(int i) {
        List<Object> retained = graph.node(i).retain();
        for (int k = 0, m = retained.size(); k < m; k++) {
            Retained.release(retained.get(k));
        }
    }

    private void cancelOnLanes() {
        LaneProtocol.Cancel cancel = new LaneProtocol.Cancel(requestId);
        for (ActorRef<LaneProtocol.Command> ref : laneRefs) {
            ref.tell(cancel);
        }
    }

    private Behavior<Command> finishIfDone() {
        if (terminal < n) {
            return this;
        }
        RequestState state;
        if (cancelled) {
            state = RequestState.CANCELLED;
        } else if (deadlineExceeded) {
            state = RequestState.DEADLINE_EXCEEDED;
        } else {
            state = RequestState.FINISHED;
            for (WorkState s : states) {
                if (s != WorkState.COMMITTED) {
                    state = RequestState.FAILED;
                    break;
                }
            }
        }
        LaneProtocol.ForgetScope forget = new LaneProtocol.ForgetScope(requestId);
        for (ActorRef<LaneProtocol.Command> ref : laneRefs) {
            ref.tell(forget);
        }
        onEnd.run();
        result.complete(new GraphResult(requestId, state, graph, states, causes, labels, base));
        return Behaviors.stopped();
    }

    private CompletionHandle handle(int i) {
        CompletionHandle h = handles[i];
        if (h == null) {
            h = CompletionHandle.local(laneIds[graph.laneOf[i]], base + i);
            handles[i] = h;
        }
        return h;
    }

    private int index(CompletionHandle h) {
        long i = h.sequence() - base;
        if (i < 0 || i >= n) {
            throw new IllegalStateException("request " + requestId + " got a reply for handle " + h + ", which is not one of its own");
        }
        return (int) i;
    }
}
