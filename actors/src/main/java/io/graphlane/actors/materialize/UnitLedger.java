package io.graphlane.actors.materialize;

import io.graphlane.core.backend.ParameterBackend;
import io.graphlane.core.completion.Completion;
import io.graphlane.core.param.Materialization;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The supervisor's record of what one unit owns: per parameter, the lease not yet handed to a
 * materialization, the in-flight materialization (which owns its leases), the finished weight not
 * yet bound, or nothing. Every release goes through a state change made here first, so each lease
 * and weight is released exactly once whoever drives the unit (its worker, or the supervisor after
 * the worker crashed), and an in-flight materialization is only finished once its exact completion
 * is known to have ended. No Pekko here: a worker and its supervisor hand the ledger over, never
 * use it at the same time; the methods are synchronized so the hand-over is safely published.
 *
 * @param <X> the loading context
 * @param <P> the parameter slot
 * @param <W> the weight
 * @param <M> the in-flight materialization
 */
final class UnitLedger<X, P, W, M extends Materialization<W>> {
    private static final Logger LOG = LoggerFactory.getLogger(UnitLedger.class);

    /** What the ledger holds for one parameter. */
    enum State {
        /** A lease the unit owns, not yet handed to a materialization (or a recipe not yet started: nothing owned). */
        UNSTARTED,
        /** A materialization in flight: it owns the leases until it is finished after its completion. */
        IN_FLIGHT,
        /** A finished weight, leases released, not yet bound. */
        FINISHED,
        /** Bound to its parameter: the parameter slot owns the weight now. */
        BOUND,
        /** Nothing left: the lease was released or the weight discarded. */
        RELEASED
    }

    private final class Entry {
        final WeightRequest<P> request;
        State state = State.UNSTARTED;
        M materialization;
        W weight;

        Entry(WeightRequest<P> request) {
            this.request = request;
        }
    }

    private final String unit;
    private final ParameterBackend<X, P, W, M> backend;
    private final List<Entry> entries = new ArrayList<>();

    UnitLedger(String unit, List<WeightRequest<P>> requests, ParameterBackend<X, P, W, M> backend) {
        this.unit = Objects.requireNonNull(unit, "unit");
        this.backend = Objects.requireNonNull(backend, "backend");
        for (WeightRequest<P> r : requests) {
            entries.add(new Entry(r));
        }
    }

    String unit() {
        return unit;
    }

    synchronized int size() {
        return entries.size();
    }

    synchronized WeightRequest<P> request(int index) {
        return entries.get(index).request;
    }

    synchronized State state(int index) {
        return entries.get(index).state;
    }

    /**
     * Starts the materialization of entry {@code index}; the ledger then holds its guard.
     *
     * @return the completion to wait for, or null if starting failed (the cause is in {@code failures};
     *         an unstarted lease stays owned here and is released by {@link #releaseUnstarted})
     */
    synchronized Completion start(int index, X context, List<UnitFailure> failures) {
        Entry e = entries.get(index);
        requireState(e, State.UNSTARTED, "start");
        try {
            M m = e.request.source() instanceof WeightSource.FromLease l
                    ? backend.materialize(l.lease(), context)
                    : backend.materializeRecipe(((WeightSource.FromRecipe) e.request.source()).recipe(), context);
            e.materialization = Objects.requireNonNull(m, "the backend returned no materialization");
            e.state = State.IN_FLIGHT;
            return m.completion();
        } catch (RuntimeException ex) {
            failures.add(new UnitFailure(e.request.name(), UnitFailure.Phase.START, ex));
            if (e.request.source() instanceof WeightSource.FromRecipe) {
                e.state = State.RELEASED; // a recipe owns nothing until its materialization exists
            }
            return null;
        }
    }

    /**
     * Finishes the in-flight materialization of entry {@code index}, whose completion has ended:
     * its leases are released (by the backend, exactly once) and the weight kept here, or the
     * failure added to {@code failures}. Never blocks.
     *
     * @throws IllegalStateException if the entry is not in flight or its completion has not ended
     */
    synchronized void finish(int index, List<UnitFailure> failures) {
        Entry e = entries.get(index);
        requireState(e, State.IN_FLIGHT, "finish");
        if (!e.materialization.completion().isDone()) {
            throw new IllegalStateException("unit " + unit + ": materialization of " + e.request.name()
                    + " cannot be finished before its completion " + e.materialization.completion().label() + " ended");
        }
        M m = e.materialization;
        e.materialization = null;
        e.state = State.RELEASED;
        try {
            e.weight = backend.finishMaterialization(m);
            e.state = State.FINISHED;
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            failures.add(new UnitFailure(e.request.name(), UnitFailure.Phase.REALIZATION, ex));
        } catch (RuntimeException ex) {
            failures.add(new UnitFailure(e.request.name(), UnitFailure.Phase.REALIZATION, ex));
        }
    }

    /** Releases every lease not yet handed to a materialization. */
    synchronized void releaseUnstarted() {
        for (Entry e : entries) {
            if (e.state == State.UNSTARTED) {
                e.state = State.RELEASED;
                if (e.request.source() instanceof WeightSource.FromLease l) {
                    try {
                        l.lease().release();
                    } catch (RuntimeException ex) {
                        LOG.error("unit {}: releasing lease {} of {} failed", unit, l.lease().name(), e.request.name(), ex);
                    }
                }
            }
        }
    }

    /** Discards every finished weight that was not bound (closing it if it is {@link AutoCloseable}). */
    synchronized void discardUnbound() {
        for (Entry e : entries) {
            if (e.state == State.FINISHED) {
                W w = e.weight;
                e.weight = null;
                e.state = State.RELEASED;
                if (w instanceof AutoCloseable closeable) {
                    try {
                        closeable.close();
                    } catch (Exception ex) {
                        LOG.error("unit {}: discarding the weight of {} failed", unit, e.request.name(), ex);
                    }
                }
            }
        }
    }

    /** Validates every finished weight against its parameter; the failures name each parameter. */
    synchronized List<UnitFailure> validateAll() {
        List<UnitFailure> failures = new ArrayList<>();
        for (Entry e : entries) {
            requireState(e, State.FINISHED, "validate");
            try {
                backend.validateBind(e.request.parameter(), e.weight);
            } catch (RuntimeException ex) {
                failures.add(new UnitFailure(e.request.name(), UnitFailure.Phase.VALIDATION, ex));
            }
        }
        return failures;
    }

    /**
     * Binds every finished weight, which {@link #validateAll} accepted; the parameter slots own them
     * then. All or nothing: if a bind throws, the weights bound before it are unbound again (latest
     * first) and stay here as finished weights for {@link #discardUnbound}, and the failure is rethrown.
     */
    synchronized void bindAll() {
        for (Entry e : entries) {
            requireState(e, State.FINISHED, "bind");
        }
        int bound = 0;
        try {
            for (; bound < entries.size(); bound++) {
                Entry e = entries.get(bound);
                backend.bind(e.request.parameter(), e.weight);
                e.state = State.BOUND;
            }
        } catch (RuntimeException | Error bindFailed) {
            for (int i = bound - 1; i >= 0; i--) {
                Entry e = entries.get(i);
                try {
                    backend.unbind(e.request.parameter(), e.weight);
                    e.state = State.FINISHED;
                } catch (RuntimeException unbindFailed) {
                    bindFailed.addSuppressed(unbindFailed);
                    LOG.error("unit {}: unbinding {} after a failed bind failed; the parameter keeps its weight",
                            unit, e.request.name(), unbindFailed);
                }
            }
            throw bindFailed;
        }
        for (Entry e : entries) {
            e.weight = null;
        }
    }

    /** The indexes of entries whose materialization is in flight, with their completions. */
    synchronized List<InFlight> inFlight() {
        List<InFlight> out = new ArrayList<>();
        for (int i = 0; i < entries.size(); i++) {
            Entry e = entries.get(i);
            if (e.state == State.IN_FLIGHT) {
                out.add(new InFlight(i, e.materialization.completion()));
            }
        }
        return out;
    }

    /** One in-flight entry. */
    record InFlight(int index, Completion completion) {
    }

    /** The parameter names, in request order. */
    synchronized List<String> names() {
        return entries.stream().map(e -> e.request.name()).toList();
    }

    /**
     * Lets go of everything without a supervisor to report to (it is stopping): unstarted leases and
     * unbound weights now, in-flight materializations when their exact completions end.
     */
    void abandon() {
        releaseUnstarted();
        discardUnbound();
        for (InFlight f : inFlight()) {
            f.completion().whenDone(outcome -> {
                List<UnitFailure> ignored = new ArrayList<>();
                finish(f.index(), ignored);
                discardUnbound();
            });
        }
    }

    private void requireState(Entry e, State expected, String operation) {
        if (e.state != expected) {
            throw new IllegalStateException("unit " + unit + ": cannot " + operation + " " + e.request.name()
                    + ": expected state " + expected + ", found " + e.state);
        }
    }
}
