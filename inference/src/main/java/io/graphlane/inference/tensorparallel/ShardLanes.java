package io.graphlane.inference.tensorparallel;

import io.graphlane.actors.lane.LaneProtocol;
import io.graphlane.actors.lane.LaneRegistry;
import io.graphlane.core.graph.CompletionHandle;
import io.graphlane.core.graph.LaneId;
import io.graphlane.scheduler.pipeline.StageStep;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.function.BiConsumer;
import java.util.function.Function;
import org.apache.pekko.actor.typed.ActorRef;

/**
 * The compute and collective lanes of one {@link CollectiveShard} as its host actor submits to them: each work goes to
 * its lane's actor under a fresh handle of that lane. A lane hands ready work to its worker in the order it becomes
 * ready, and a work ordered after another lane's work becomes ready only once that lane answered, so submission order
 * alone does not keep a lane's order; a {@link Chain} (the works of one collective group) therefore orders every step's
 * first work on each lane, and every lone compute work (cache changes), after the previous work of the chain on that
 * lane. Thus each rank enters its collectives in the order its host submitted the steps, and a request's cache changes
 * and steps run in the order they were sent.
 *
 * <p>Not thread-safe: owned by one actor, which reports every answer of its lanes to {@link Chain#ended}.
 *
 * @param <W> the lanes' work type
 */
public final class ShardLanes<W> {
    private final LaneRegistry registry;
    private final LaneId compute;
    private final LaneId collective;
    private final Function<Runnable, W> toWork;
    private final ActorRef<LaneProtocol.LaneReply> replyTo;

    /**
     * The lanes {@code compute} and {@code collective}, found in {@code registry}, running each body as {@code toWork}
     * of it; the lanes answer {@code replyTo}.
     */
    public ShardLanes(LaneRegistry registry, LaneId compute, LaneId collective, Function<Runnable, W> toWork,
                      ActorRef<LaneProtocol.LaneReply> replyTo) {
        this.registry = Objects.requireNonNull(registry, "registry");
        this.compute = Objects.requireNonNull(compute, "compute");
        this.collective = Objects.requireNonNull(collective, "collective");
        this.toWork = Objects.requireNonNull(toWork, "toWork");
        this.replyTo = Objects.requireNonNull(replyTo, "replyTo");
    }

    /** The compute lane. */
    public LaneId compute() {
        return compute;
    }

    /** The collective lane. */
    public LaneId collective() {
        return collective;
    }

    /**
     * Chains of collective groups given up, each with what retires its group ({@code R}), held until every work of the
     * chain has ended; then {@code retire} is called with both, on the owner's thread. Not thread-safe.
     *
     * @param <R> what retires a group
     */
    public static final class Retiring<R> {
        private final Map<ShardLanes<?>.Chain, R> held = new HashMap<>();
        private final BiConsumer<ShardLanes<?>.Chain, R> retire;

        /** Retirements made by {@code retire}. */
        public Retiring(BiConsumer<ShardLanes<?>.Chain, R> retire) {
            this.retire = Objects.requireNonNull(retire, "retire");
        }

        /** Retires {@code group} of {@code chain} now if the chain has drained, or once it has. */
        public void add(ShardLanes<?>.Chain chain, R group) {
            if (chain.drained()) {
                retire.accept(chain, group);
            } else {
                held.put(chain, group);
            }
        }

        /** Notes the end of the work of {@code handle}; false if it is not of a held chain. */
        public boolean ended(CompletionHandle handle) {
            for (var it = held.entrySet().iterator(); it.hasNext(); ) {
                var e = it.next();
                if (e.getKey().ended(handle)) {
                    if (e.getKey().drained()) {
                        it.remove();
                        retire.accept(e.getKey(), e.getValue());
                    }
                    return true;
                }
            }
            return false;
        }
    }

    /** A new chain: the works of one collective group, in a lane scope of its own. */
    public Chain chain() {
        return new Chain(registry.newScope());
    }

    /**
     * The works of one group on both lanes, in submission order per lane. A failed work of the chain poisons the works
     * chained after it (its group is broken anyway: the failed work's rank left it).
     */
    public final class Chain {
        private final long scope;
        private final Set<CompletionHandle> outstanding = new HashSet<>();
        private CompletionHandle computeTail;
        private CompletionHandle collectiveTail;

        private Chain(long scope) {
            this.scope = scope;
        }

        /**
         * Submits {@code works}, a plan of {@link CollectiveShard#plan}, in plan order, each after the submissions it
         * names and retaining its values, a lane's first work of the step after the chain's previous work on that lane;
         * returns the handles in plan order (the last is the step's last work).
         */
        public List<CompletionHandle> submitStep(List<StageStep.Submission<Runnable>> works) {
            int n = works.size();
            int[] consumers = new int[n];
            int lastCompute = -1;
            int lastCollective = -1;
            for (int i = 0; i < n; i++) {
                works.get(i).after().forEach(j -> consumers[j]++);
                if (works.get(i).lane() == CollectiveShard.COMPUTE) {
                    lastCompute = i;
                } else {
                    lastCollective = i;
                }
            }
            long first = registry.reserveSequences(n);
            List<CompletionHandle> handles = new ArrayList<>(n);
            boolean computeSeen = false;
            boolean collectiveSeen = false;
            for (int i = 0; i < n; i++) {
                StageStep.Submission<Runnable> s = works.get(i);
                boolean onCompute = s.lane() == CollectiveShard.COMPUTE;
                LaneId lane = onCompute ? compute : collective;
                CompletionHandle handle = CompletionHandle.local(lane, first + i);
                List<CompletionHandle> after = new ArrayList<>(s.after().size() + 1);
                s.after().forEach(j -> after.add(handles.get(j)));
                if (onCompute && !computeSeen) {
                    computeSeen = true;
                    addTail(after, computeTail);
                } else if (!onCompute && !collectiveSeen) {
                    collectiveSeen = true;
                    addTail(after, collectiveTail);
                }
                boolean tail = i == lastCompute || i == lastCollective;
                handles.add(handle);
                send(lane, handle, toWork.apply(s.work()), after, s.retain(), consumers[i] + (tail ? 1 : 0));
            }
            if (lastCompute >= 0) {
                computeTail = handles.get(lastCompute);
            }
            if (lastCollective >= 0) {
                collectiveTail = handles.get(lastCollective);
            }
            return handles;
        }

        /** Submits {@code work} on the compute lane after the chain's previous work there; returns its handle. */
        public CompletionHandle submitCompute(Runnable work) {
            CompletionHandle handle = CompletionHandle.local(compute, registry.reserveSequences(1));
            List<CompletionHandle> after = new ArrayList<>(1);
            addTail(after, computeTail);
            send(compute, handle, toWork.apply(work), after, List.of(), 1);
            computeTail = handle;
            return handle;
        }

        private void addTail(List<CompletionHandle> after, CompletionHandle tail) {
            if (tail != null) {
                after.add(tail);
            }
        }

        private void send(LaneId lane, CompletionHandle handle, W work, List<CompletionHandle> after, List<Object> retain, int consumers) {
            outstanding.add(handle);
            registry.lane(lane).tell(new LaneProtocol.Submit<>(handle, work, after, retain, scope, LaneProtocol.NO_DEADLINE,
                    consumers, replyTo));
        }

        /** Notes that the work of {@code handle} ended (finished, or refused); false if it is not this chain's. */
        public boolean ended(CompletionHandle handle) {
            return outstanding.remove(handle);
        }

        /** Whether every work submitted in this chain has ended. */
        public boolean drained() {
            return outstanding.isEmpty();
        }

        /** Lets both lanes forget what they keep of this chain's handles for a work that will not come; once drained. */
        public void close() {
            registry.lane(compute).tell(new LaneProtocol.ForgetScope(scope));
            registry.lane(collective).tell(new LaneProtocol.ForgetScope(scope));
        }
    }
}
