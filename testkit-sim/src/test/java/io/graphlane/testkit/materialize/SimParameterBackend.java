package io.graphlane.testkit.materialize;

import io.graphlane.core.GraphlaneException;
import io.graphlane.core.backend.ParameterBackend;
import io.graphlane.core.completion.Outcome;
import io.graphlane.core.param.EncodedLease;
import io.graphlane.core.param.Materialization;
import io.graphlane.core.param.WeightRecipe;
import io.graphlane.core.tensor.TensorSpec;
import io.graphlane.testkit.ledger.LedgerLease;
import io.graphlane.testkit.ledger.RetentionLedger;
import io.graphlane.testkit.sim.SimBackend;
import io.graphlane.testkit.sim.SimCompletion;
import io.graphlane.testkit.sim.SimExecutor;
import io.graphlane.testkit.sim.SimWork;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;

/**
 * A parameter backend on the simulated device: each materialization is one submission of
 * {@link SimWork} on the loading lane (held by name unless a test gives another work), its leases
 * are {@link LedgerLease}s whose ledger entries are held until that submission's completion, and finishing
 * releases them, unless the device was lost: then the completion is unproven and the leases are
 * reported leaked on purpose, never released.
 */
final class SimParameterBackend implements ParameterBackend<SimExecutor, SimParameterBackend.Slot, SimParameterBackend.Weight,
        SimParameterBackend.Realization> {

    /** A parameter slot that accepts one spec. */
    static final class Slot {
        final String name;
        final TensorSpec spec;
        volatile Weight bound;

        Slot(String name, TensorSpec spec) {
            this.name = name;
            this.spec = spec;
        }
    }

    /** A realized weight. */
    record Weight(String name, TensorSpec spec) { }

    /** One submission on the simulated loading lane and the leases it owns. */
    record Realization(String name, TensorSpec spec, SimCompletion completion, List<EncodedLease> leases)
            implements Materialization<Weight> { }

    private final SimBackend device;
    private final RetentionLedger ledger;
    final Set<String> crashOnBind = ConcurrentHashMap.newKeySet();
    final Set<String> crashOnStart = ConcurrentHashMap.newKeySet();
    volatile Function<String, SimWork> work = SimWork::held;

    SimParameterBackend(SimBackend device, RetentionLedger ledger) {
        this.device = device;
        this.ledger = ledger;
    }

    @Override
    public Realization materialize(EncodedLease lease, SimExecutor lane) {
        return start(lease.name(), lease.spec(), List.of(lease), lane);
    }

    @Override
    public Realization materializeRecipe(WeightRecipe recipe, SimExecutor lane) {
        return start(recipe.name(), recipe.output(), recipe.acquireSources(), lane);
    }

    private Realization start(String name, TensorSpec spec, List<EncodedLease> leases, SimExecutor lane) {
        if (crashOnStart.contains(name)) {
            throw new AssertionError("backend bug while starting " + name);
        }
        SimCompletion completion = device.submit(lane, work.apply(name));
        for (EncodedLease l : leases) {
            ((LedgerLease) l).entry().heldUntil(completion);
        }
        return new Realization(name, spec, completion, leases);
    }

    @Override
    public Weight finishMaterialization(Realization m) throws InterruptedException {
        Outcome outcome = m.completion().await();
        if (m.completion().isUnproven()) {
            ledger.markUnproven(m.completion(), "device lost");
            for (EncodedLease l : m.leases()) {
                ((LedgerLease) l).entry().reportLeak("the device was lost under " + m.completion().label());
            }
        } else {
            for (EncodedLease l : m.leases()) {
                l.release();
            }
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
        if (!parameter.spec.equals(weight.spec())) {
            throw new GraphlaneException("parameter " + parameter.name + ": expected " + parameter.spec + ", found " + weight.spec());
        }
    }

    @Override
    public void bind(Slot parameter, Weight weight) {
        if (crashOnBind.contains(parameter.name)) {
            throw new IllegalStateException("backend bug while binding " + parameter.name);
        }
        parameter.bound = weight;
    }

    @Override
    public void unbind(Slot parameter, Weight weight) {
        if (parameter.bound != weight) {
            throw new IllegalStateException("parameter " + parameter.name + " is not bound to the weight being unbound");
        }
        parameter.bound = null;
    }
}
