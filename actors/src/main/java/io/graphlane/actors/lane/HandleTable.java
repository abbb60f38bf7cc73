package io.graphlane.actors.lane;

import io.graphlane.actors.lane.LaneProtocol.Ended;
import io.graphlane.actors.lane.LaneProtocol.Resolved;
import io.graphlane.actors.lane.LaneProtocol.Subscribe;
import io.graphlane.core.completion.Outcome;
import io.graphlane.core.graph.CompletionHandle;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import java.util.function.Function;
import java.util.function.Predicate;

/**
 * A lane's handle-resolution table: the handles the lane produced, from acceptance until their work has ended and
 * every expected consumer has asked (or their scope is forgotten), and who waits for handles of the lane that
 * have not arrived yet (consumers on the lane, and subscribers on other lanes, counted against a bound). No Pekko
 * behavior and no locking: one lane actor owns it.
 *
 * @param <E> what the lane keeps per produced handle
 */
final class HandleTable<E extends HandleTable.Produced> {

    /** What the table keeps of a produced handle: the entry extends it; the table counts the consumers served. */
    abstract static class Produced {
        private int served;

        abstract CompletionHandle handle();

        abstract long scope();

        /** How many consumers will ask for the handle's resolution. */
        abstract int expectedConsumers();

        /** Whether the handle's work has ended (its outcome is known). */
        abstract boolean hasEnded();

        /** How many consumers have been answered so far. */
        final int served() {
            return served;
        }
    }

    /** Who waits for a handle that has not arrived: consumers on this lane and subscribers from others. */
    static final class Early<E> {
        private final ArrayList<E> localWaiters = new ArrayList<>(2);
        private final ArrayList<Subscribe> subscribers = new ArrayList<>(2);

        /** Consumers on this lane, in arrival order; empty if none. */
        ArrayList<E> localWaiters() {
            return localWaiters;
        }

        /** Subscribers from other lanes, in arrival order; empty if none. */
        ArrayList<Subscribe> subscribers() {
            return subscribers;
        }
    }

    private final HashMap<CompletionHandle, E> produced = new HashMap<>();
    private final HashMap<CompletionHandle, Early<E>> early = new HashMap<>();
    private int pendingSubscriptions;

    /** The entry of produced handle {@code handle}, or null if the lane holds none (not arrived, or forgotten). */
    E get(CompletionHandle handle) {
        return produced.get(handle);
    }

    boolean contains(CompletionHandle handle) {
        return produced.containsKey(handle);
    }

    /** How many produced handles the table holds. */
    int size() {
        return produced.size();
    }

    /** Every produced handle's entry; removing through it forgets the handle. */
    Collection<E> entries() {
        return produced.values();
    }

    /** Subscriptions held for handles that have not arrived. */
    int pendingSubscriptions() {
        return pendingSubscriptions;
    }

    /**
     * Records {@code entry} as produced; returns who already waited for its handle (no longer counted as
     * pending), or null if nobody did.
     *
     * @throws IllegalStateException if the handle is held already
     */
    Early<E> accept(E entry) {
        CompletionHandle h = entry.handle();
        if (produced.putIfAbsent(h, entry) != null) {
            throw new IllegalStateException("handle " + h + " is held already");
        }
        Early<E> waiting = early.isEmpty() ? null : early.remove(h);
        if (waiting != null) {
            pendingSubscriptions -= waiting.subscribers.size();
        }
        return waiting;
    }

    /** {@code consumer} (on this lane) waits for {@code handle}, which has not arrived. */
    void waitLocally(CompletionHandle handle, E consumer) {
        early.computeIfAbsent(handle, h -> new Early<>()).localWaiters.add(consumer);
    }

    /** {@code s} waits for its handle, which has not arrived; counted until answered or the handle arrives. */
    void subscribeEarly(Subscribe s) {
        early.computeIfAbsent(s.handle(), h -> new Early<>()).subscribers.add(s);
        pendingSubscriptions++;
    }

    /** One consumer of {@code entry} was answered; forgets it once it has ended and all its consumers asked. */
    void served(E entry) {
        ((Produced) entry).served++;
        forgetIfDone(entry);
    }

    /** Forgets {@code entry} if its work has ended and every expected consumer has asked. */
    void forgetIfDone(E entry) {
        if (entry.hasEnded() && entry.served() >= entry.expectedConsumers()) {
            produced.remove(entry.handle(), entry);
        }
    }

    /** Forgets every ended handle of scope {@code scope}, asked for or not. */
    void forgetScope(long scope) {
        entries().removeIf(e -> e.hasEnded() && e.scope() == scope);
    }

    /**
     * Answers every early subscription {@code which} selects with the failure {@code outcome} gives for its handle,
     * and stops counting it.
     */
    void answerEarly(Predicate<Subscribe> which, Function<CompletionHandle, Outcome> outcome) {
        for (Map.Entry<CompletionHandle, Early<E>> p : early.entrySet()) {
            for (Iterator<Subscribe> it = p.getValue().subscribers.iterator(); it.hasNext(); ) {
                Subscribe sub = it.next();
                if (which.test(sub)) {
                    it.remove();
                    pendingSubscriptions--;
                    sub.subscriber().tell(new Resolved(p.getKey(), new Ended(outcome.apply(p.getKey()), p.getKey().toString())));
                }
            }
        }
    }

    /** Drops early local waiters that {@code gone} selects, and waiting records left empty. */
    void pruneEarly(Predicate<E> gone) {
        for (Iterator<Early<E>> it = early.values().iterator(); it.hasNext(); ) {
            Early<E> p = it.next();
            p.localWaiters.removeIf(gone);
            if (p.localWaiters.isEmpty() && p.subscribers.isEmpty()) {
                it.remove();
            }
        }
    }

    /** Whether anyone waits for {@code handle}, which has not arrived. */
    boolean awaited(CompletionHandle handle) {
        return early.containsKey(handle);
    }

}
