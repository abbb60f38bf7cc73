package io.graphlane.cli.soak;

import io.graphlane.actors.materialize.MaterializationSettings;
import io.graphlane.actors.materialize.MaterializationSupervisor;
import io.graphlane.actors.materialize.UnitReply;
import io.graphlane.actors.materialize.WeightRequest;
import io.graphlane.actors.materialize.WeightSource;
import io.graphlane.core.GraphlaneException;
import io.graphlane.core.backend.ParameterBackend;
import io.graphlane.core.completion.Completion;
import io.graphlane.core.completion.Outcome;
import io.graphlane.core.param.EncodedLease;
import io.graphlane.core.param.Materialization;
import io.graphlane.core.param.WeightRecipe;
import io.graphlane.core.tensor.DType;
import io.graphlane.core.tensor.TensorSpec;
import io.graphlane.testkit.ledger.LedgerLease;
import io.graphlane.testkit.ledger.RetentionLedger;
import io.graphlane.testkit.sim.SimCompletion;
import io.graphlane.testkit.sim.SimExecutor;
import io.graphlane.testkit.sim.SimWork;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.Props;
import org.apache.pekko.actor.typed.Terminated;
import org.apache.pekko.actor.typed.javadsl.Behaviors;

/**
 * A materialization supervisor binding random atomic units of weight requests, each weight read
 * from a lease of a simulated checkpoint (a {@link LedgerLease}) by work on a loading lane of the
 * simulated device that lasts, ends at once, fails, or is held until the driver decides it. Faults:
 * failing materializations, a weight that does not fit its parameter, refused units (empty, a
 * parameter named twice, a unit name in progress, overload), the unit timeout firing while a
 * materialization is held past it (it then completes late), the loading lane stopped mid-unit (later
 * starts are refused), the supervisor stopped mid-unit. Checks: every lease released exactly once and
 * never before the exact completion of the materialization that reads it (late ones included), every
 * finished weight discarded or bound exactly once, every unit answered exactly once, no unit half
 * bound (a unit answered bound has every parameter bound, one answered failed none), nothing
 * finished before its completion ended.
 */
final class MaterializationScenario {
    private static final AtomicInteger NAMES = new AtomicInteger();

    /** A parameter slot: the spec it accepts and the weight bound to it. */
    static final class Slot {
        final String name;
        final TensorSpec spec;
        final AtomicReference<Weight> bound = new AtomicReference<>();
        final AtomicInteger binds = new AtomicInteger();

        Slot(String name, TensorSpec spec) {
            this.name = name;
            this.spec = spec;
        }
    }

    /** A finished weight: a ledger entry, released when it is discarded or unloaded. */
    static final class Weight implements AutoCloseable {
        final String name;
        final TensorSpec spec;
        final RetentionLedger.Entry entry;

        Weight(String name, TensorSpec spec, RetentionLedger.Entry entry) {
            this.name = name;
            this.spec = spec;
            this.entry = entry;
        }

        @Override
        public void close() {
            entry.close();
        }
    }

    /** An in-flight materialization: the work on the loading lane and the lease it owns. */
    record SimMaterialization(String name, SimCompletion completion, LedgerLease lease, AtomicBoolean finished)
            implements Materialization<Weight> { }

    /** One planned unit. */
    private record Unit(String name, List<WeightRequest<Slot>> requests, List<Slot> slots) { }

    private final ScenarioRun run;
    private final ActorSystem<?> system;
    /** The work each weight's materialization runs, by lease name. */
    private final Map<String, SimWork> work = new ConcurrentHashMap<>();
    private final Map<String, List<UnitReply>> replies = new ConcurrentHashMap<>();
    private final List<Unit> units = new ArrayList<>();
    /** Holds kept past the unit timeout: released once their unit was answered. */
    private final Map<String, String> lateHolds = new ConcurrentHashMap<>();
    private final List<String> lateReleased = new CopyOnWriteArrayList<>();
    private final AtomicInteger sent = new AtomicInteger();

    MaterializationScenario(ScenarioRun run, ActorSystem<?> system) {
        this.run = run;
        this.system = system;
    }

    void play(FaultInjector injector) {
        SplittableRandom rnd = run.random();
        String name = "soak-materialization-" + NAMES.incrementAndGet();
        SimExecutor lane = run.sim().forkExecutors(run.sim().rootExecutor(), 1).get(0);
        boolean lateUnits = rnd.nextInt(100) < 30;
        // With late units, a timeout of a few milliseconds of wall time, which a held materialization outlasts;
        // others may also run past it when the cores are busy, and are then answered failed just the same.
        MaterializationSettings settings = new MaterializationSettings(1 + rnd.nextInt(3), rnd.nextInt(4),
                lateUnits ? Duration.ofMillis(1 + rnd.nextInt(5)) : MaterializationSettings.DEFAULT_UNIT_TIMEOUT);
        run.note(name + ": " + settings + (lateUnits ? ", units held past their timeout" : ""));

        CompletableFuture<ActorRef<MaterializationSupervisor.Command<Slot>>> supervisor = new CompletableFuture<>();
        CompletableFuture<Void> stopped = new CompletableFuture<>();
        stopped.whenComplete((v, e) -> run.wake());
        ActorRef<Object> host = system.systemActorOf(host(new SimParameters(), lane, settings, supervisor, stopped), name, Props.empty());
        ActorRef<UnitReply> replyTo = host.narrow();
        ActorRef<MaterializationSupervisor.Command<Slot>> ref = supervisor.join();

        int count = 1 + rnd.nextInt(5);
        int lastSend = 0;
        for (int u = 0; u < count; u++) {
            Unit unit = planUnit(name, u, rnd, lateUnits);
            units.add(unit);
            int round = rnd.nextInt(100) < 70 ? 0 : rnd.nextInt(4);
            lastSend = Math.max(lastSend, round);
            run.atRound(round, () -> {
                sent.incrementAndGet();
                ref.tell(new MaterializationSupervisor.MaterializeUnit<>(unit.name(), unit.requests(), replyTo));
            });
        }
        if (rnd.nextInt(100) < 10) {
            int round = rnd.nextInt(5);
            run.atRound(round, () -> {
                run.note("loading lane stopped at round " + run.round());
                run.sim().shutdownExecutor(lane);
            });
        }
        boolean stopEarly = rnd.nextInt(100) < 10;
        if (stopEarly) {
            // after the last unit was sent: a unit told to a supervisor that already stopped is never received, and its
            // leases stay with the caller
            int round = lastSend + rnd.nextInt(3);
            run.atRound(round, () -> {
                run.note("supervisor stopped at round " + run.round());
                ref.tell(new MaterializationSupervisor.Stop<>());
            });
        }
        run.everyRound(this::releaseLateHolds);
        injector.inject(run);

        run.driveUntil(() -> allAnswered() && run.extraEnded(), "materialization units");
        ref.tell(new MaterializationSupervisor.Stop<>());
        run.driveUntil(stopped::isDone, "supervisor stop");
        run.driveUntil(() -> lateReleased.containsAll(lateHolds.keySet()), "late completions");
        host.tell(Done.DONE);
        check();
    }

    /** Tells the host to stop. */
    private enum Done { DONE }

    /**
     * A host that spawns and watches the supervisor and takes the units' answers: {@code stopped}
     * completes once the supervisor stopped; {@link Done} stops the host.
     */
    private Behavior<Object> host(SimParameters backend, SimExecutor lane, MaterializationSettings settings,
                                  CompletableFuture<ActorRef<MaterializationSupervisor.Command<Slot>>> supervisor,
                                  CompletableFuture<Void> stopped) {
        return Behaviors.setup(ctx -> {
            ActorRef<MaterializationSupervisor.Command<Slot>> ref = ctx.spawn(MaterializationSupervisor.create(backend, lane, settings), "supervisor");
            ctx.watch(ref);
            supervisor.complete(ref);
            return Behaviors.receive(Object.class)
                    .onMessage(UnitReply.class, r -> {
                        replies.computeIfAbsent(r.unit(), k -> new CopyOnWriteArrayList<>()).add(r);
                        run.note("unit " + r.unit() + " answered: " + (r instanceof UnitReply.Failed f ? f.describe() : r));
                        run.wake();
                        return Behaviors.same();
                    })
                    .onMessage(Done.class, d -> Behaviors.stopped())
                    .onSignal(Terminated.class, t -> {
                        stopped.complete(null);
                        return Behaviors.same();
                    })
                    .build();
        });
    }

    private Unit planUnit(String scenario, int u, SplittableRandom rnd, boolean lateUnits) {
        String unitName = rnd.nextInt(100) < 6 && u > 0 ? "u" + (u - 1) : "u" + u; // sometimes a name already sent
        int params = rnd.nextInt(100) < 4 ? 0 : 1 + rnd.nextInt(6);
        boolean late = lateUnits && rnd.nextInt(100) < 50;
        int lateParam = params == 0 ? -1 : rnd.nextInt(params);
        List<WeightRequest<Slot>> requests = new ArrayList<>();
        List<Slot> slots = new ArrayList<>();
        for (int p = 0; p < params; p++) {
            String param = "p" + p;
            String leaseName = scenario + "/u" + u + "/" + param;
            int cols = 1 + rnd.nextInt(4);
            TensorSpec spec = TensorSpec.of(DType.F32, 1, cols);
            TensorSpec slotSpec = rnd.nextInt(100) < 4 ? TensorSpec.of(DType.F32, 2, cols) : spec;
            int kind = rnd.nextInt(100);
            SimWork w;
            if (late && p == lateParam) {
                String hold = leaseName + "-late";
                lateHolds.put(hold, unitName);
                w = SimWork.held(hold);
            } else if (kind < 45) {
                w = SimWork.lasting(Duration.ofNanos(rnd.nextInt(40_000)));
            } else if (kind < 55) {
                w = SimWork.instant();
            } else if (kind < 63) {
                w = SimWork.failingAfter(Duration.ofNanos(rnd.nextInt(20_000)), new IllegalStateException(leaseName + " has bad bytes (soak fault)"));
            } else {
                w = SimWork.held(run.holdOf(leaseName, rnd.nextInt(100) < 8 ? new IllegalStateException(leaseName + " fails (soak fault)") : null));
            }
            work.put(leaseName, w);
            LedgerLease lease = LedgerLease.zeros(run.ledger(), leaseName, spec);
            Slot slot = new Slot(unitName + "/" + param, slotSpec);
            slots.add(slot);
            // sometimes a parameter named twice: the unit is refused and each of its leases released once
            String requestName = rnd.nextInt(100) < 3 && p > 0 ? "p0" : param;
            requests.add(new WeightRequest<>(requestName, slot, new WeightSource.FromLease(lease)));
            run.note("unit " + unitName + " " + requestName + ": " + w + (slotSpec.equals(spec) ? "" : " into a slot of " + slotSpec));
        }
        return new Unit(unitName, requests, slots);
    }

    private boolean allAnswered() {
        int answered = 0;
        for (List<UnitReply> r : replies.values()) {
            answered += r.size();
        }
        return answered >= sent.get() && sent.get() == units.size();
    }

    /** Releases, on the driver's thread, each late hold whose unit was answered: its materialization completes after the answer. */
    private void releaseLateHolds() {
        for (Map.Entry<String, String> e : lateHolds.entrySet()) {
            if (!lateReleased.contains(e.getKey()) && replies.containsKey(e.getValue())) {
                lateReleased.add(e.getKey());
                run.note("late hold " + e.getKey() + " released after unit " + e.getValue() + " was answered");
                run.sim().release(e.getKey());
            }
        }
    }

    private void check() {
        Map<String, Integer> expected = new java.util.HashMap<>();
        for (Unit u : units) {
            expected.merge(u.name(), 1, Integer::sum);
        }
        for (Map.Entry<String, Integer> e : expected.entrySet()) {
            List<UnitReply> got = replies.getOrDefault(e.getKey(), List.of());
            if (got.size() != e.getValue()) {
                run.problem("unit " + e.getKey() + " was sent " + e.getValue() + " times and answered " + got.size() + " times");
            }
        }
        for (String answered : replies.keySet()) {
            if (!expected.containsKey(answered)) {
                run.problem("an answer for unit " + answered + ", which was never sent");
            }
        }
        for (Unit u : units) {
            long bound = u.slots().stream().filter(s -> s.bound.get() != null).count();
            if (bound != 0 && bound != u.slots().size()) {
                run.problem("unit " + u.name() + " is half bound: " + bound + " of its " + u.slots().size() + " parameters");
            }
        }
        for (Map.Entry<String, Integer> e : expected.entrySet()) {
            long boundUnits = units.stream().filter(u -> u.name().equals(e.getKey()) && !u.slots().isEmpty()
                    && u.slots().stream().allMatch(s -> s.bound.get() != null)).count();
            long boundReplies = replies.getOrDefault(e.getKey(), List.of()).stream().filter(r -> r instanceof UnitReply.Bound).count();
            if (boundUnits != boundReplies) {
                run.problem("unit " + e.getKey() + ": " + boundReplies + " answers say bound, but " + boundUnits + " of its units are bound");
            }
        }
        for (Unit u : units) {
            for (Slot s : u.slots()) {
                if (s.binds.get() > 1) {
                    run.problem("parameter " + s.name + " was bound " + s.binds.get() + " times");
                }
                Weight w = s.bound.get();
                if (w != null) {
                    w.close(); // unloading the model: the parameter slot let go of its weight
                }
            }
        }
    }

    /** The parameter backend over the simulated device: the materialization of a lease is its planned work on the loading lane. */
    private final class SimParameters implements ParameterBackend<SimExecutor, Slot, Weight, SimMaterialization> {

        @Override
        public SimMaterialization materialize(EncodedLease lease, SimExecutor lane) {
            LedgerLease ledgerLease = (LedgerLease) lease;
            SimWork w = work.getOrDefault(lease.name(), SimWork.instant());
            SimCompletion completion = run.sim().submit(lane, w);
            ledgerLease.entry().heldUntil(completion);
            return new SimMaterialization(lease.name(), completion, ledgerLease, new AtomicBoolean());
        }

        @Override
        public SimMaterialization materializeRecipe(WeightRecipe recipe, SimExecutor lane) {
            throw new UnsupportedOperationException("the soak plans no recipes");
        }

        @Override
        public Weight finishMaterialization(SimMaterialization m) {
            Completion c = m.completion();
            if (!c.isDone()) {
                run.problem("materialization " + m.name() + " was finished before its completion ended");
                throw new IllegalStateException("materialization " + m.name() + " finished before its completion ended");
            }
            if (!m.finished().compareAndSet(false, true)) {
                run.problem("materialization " + m.name() + " was finished twice");
                throw new IllegalStateException("materialization " + m.name() + " finished twice");
            }
            m.lease().release();
            Outcome outcome = c.outcome().orElseThrow();
            if (outcome instanceof Outcome.Failed f) {
                throw new GraphlaneException("materializing " + m.name() + " failed: " + f.cause().getMessage(), f.cause());
            }
            return new Weight(m.name(), m.lease().spec(), run.ledger().acquire(m.name() + "/weight"));
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
            parameter.binds.incrementAndGet();
            parameter.bound.compareAndSet(null, weight);
        }
    }
}
