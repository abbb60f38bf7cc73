package io.graphlane.actors.materialize;

import io.graphlane.core.GraphlaneException;
import io.graphlane.core.backend.ParameterBackend;
import io.graphlane.core.completion.Completion;
import io.graphlane.core.completion.Outcome;
import io.graphlane.core.completion.SettableCompletion;
import io.graphlane.core.param.EncodedLease;
import io.graphlane.core.param.Materialization;
import io.graphlane.core.param.WeightRecipe;
import io.graphlane.core.tensor.TensorSpec;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A parameter backend whose realizations are completions the test controls: by default each one
 * succeeds at once; a held name waits until the test completes or fails it. Failures can be
 * injected at start, in the realization, and (as contract violations that crash a worker) at start
 * and bind. Every lease is a {@link LedgerLease} recording its release against its completion.
 */
final class FakeParameterBackend implements ParameterBackend<String, FakeParameterBackend.Slot, FakeParameterBackend.Weight,
        FakeParameterBackend.Realization> {

    /** A parameter slot expecting a spec. */
    static final class Slot {
        final String name;
        final TensorSpec spec;
        volatile Weight bound;

        Slot(String name, TensorSpec spec) {
            this.name = name;
            this.spec = spec;
        }
    }

    /** A weight that counts how often it is closed. */
    static final class Weight implements AutoCloseable {
        final String name;
        final TensorSpec spec;
        final AtomicInteger closes = new AtomicInteger();

        Weight(String name, TensorSpec spec) {
            this.name = name;
            this.spec = spec;
        }

        @Override
        public void close() {
            closes.incrementAndGet();
        }
    }

    /** An in-flight realization: a settable completion and the leases it owns. */
    record Realization(String name, SettableCompletion completion, List<EncodedLease> leases, TensorSpec spec,
                       AtomicBoolean finished) implements Materialization<Weight> { }

    /** A lease that records whether its completion had ended when it was released, and how often it was. */
    static final class LedgerLease implements EncodedLease {
        private final String name;
        private final TensorSpec spec;
        final AtomicInteger releases = new AtomicInteger();
        volatile Completion readBy;
        volatile boolean releasedBeforeCompletion;

        LedgerLease(String name, TensorSpec spec) {
            this.name = name;
            this.spec = spec;
        }

        @Override
        public String name() {
            return name;
        }

        @Override
        public TensorSpec spec() {
            return spec;
        }

        @Override
        public ByteBuffer bytes() {
            return ByteBuffer.allocate((int) spec.byteSize());
        }

        @Override
        public boolean isReleased() {
            return releases.get() > 0;
        }

        @Override
        public void release() {
            Completion c = readBy;
            if (c != null && !c.isDone()) {
                releasedBeforeCompletion = true;
            }
            if (releases.incrementAndGet() > 1) {
                throw new IllegalStateException("lease " + name + " released twice");
            }
        }
    }

    final Map<String, SettableCompletion> held = new ConcurrentHashMap<>();
    final Set<String> holdNames = ConcurrentHashMap.newKeySet();
    final Set<String> failRealization = ConcurrentHashMap.newKeySet();
    final Set<String> refuseStart = ConcurrentHashMap.newKeySet();
    final Set<String> crashStart = ConcurrentHashMap.newKeySet();
    final Set<String> crashBind = ConcurrentHashMap.newKeySet();
    final List<String> started = new java.util.concurrent.CopyOnWriteArrayList<>();
    /** Runs on the worker's thread just before each bind (a test uses it to order a message before the worker's report). */
    volatile Runnable beforeBind = () -> { };

    /** Completes the held realization of {@code name} successfully. */
    void complete(String name) {
        held.get(name).succeed();
    }

    /** Fails the held realization of {@code name}. */
    void fail(String name, Throwable cause) {
        held.get(name).fail(cause);
    }

    @Override
    public Realization materialize(EncodedLease lease, String context) {
        return begin(lease.name(), lease.spec(), List.of(lease), context);
    }

    @Override
    public Realization materializeRecipe(WeightRecipe recipe, String context) {
        return begin(recipe.name(), recipe.output(), recipe.acquireSources(), context);
    }

    private Realization begin(String name, TensorSpec spec, List<EncodedLease> leases, String context) {
        if (crashStart.contains(name)) {
            throw new AssertionError("backend bug while starting " + name);
        }
        if (refuseStart.contains(name)) {
            throw new GraphlaneException("loading lane " + context + " refused " + name);
        }
        started.add(name);
        SettableCompletion completion = new SettableCompletion(context + "/" + name);
        for (EncodedLease l : leases) {
            if (l instanceof LedgerLease ledger) {
                ledger.readBy = completion;
            }
        }
        if (holdNames.contains(name)) {
            held.put(name, completion);
        } else if (failRealization.contains(name)) {
            completion.fail(new GraphlaneException("tensor " + name + ": bad bytes"));
        } else {
            completion.succeed();
        }
        return new Realization(name, completion, leases, spec, new AtomicBoolean());
    }

    @Override
    public Weight finishMaterialization(Realization m) throws InterruptedException {
        Outcome outcome = m.completion().await();
        if (!m.finished().compareAndSet(false, true)) {
            throw new IllegalStateException("finished twice: " + m.name());
        }
        for (EncodedLease l : m.leases()) {
            l.release();
        }
        if (outcome instanceof Outcome.Failed f) {
            throw new GraphlaneException("materializing " + m.name() + " failed: " + f.cause().getMessage(), f.cause());
        }
        return new Weight(m.name(), m.spec());
    }

    @Override
    public Weight shareMaterializedWeight(Weight weight) {
        return weight;
    }

    @Override
    public void validateBind(Slot parameter, Weight weight) {
        if (!parameter.spec.equals(weight.spec)) {
            throw new GraphlaneException("parameter " + parameter.name + ": expected " + parameter.spec + ", found " + weight.spec);
        }
    }

    @Override
    public void bind(Slot parameter, Weight weight) {
        beforeBind.run();
        if (crashBind.contains(parameter.name)) {
            throw new IllegalStateException("backend bug while binding " + parameter.name);
        }
        parameter.bound = weight;
    }

    /** Every lease of {@code leases} was released exactly once, and none before its completion ended. */
    static List<String> ledgerProblems(List<LedgerLease> leases) {
        List<String> problems = new ArrayList<>();
        for (LedgerLease l : leases) {
            if (l.releases.get() != 1) {
                problems.add(l.name + " released " + l.releases.get() + " times");
            }
            if (l.releasedBeforeCompletion) {
                problems.add(l.name + " released before its completion " + l.readBy.label() + " ended");
            }
        }
        return problems;
    }
}
