package io.graphlane.cli.soak;

import io.graphlane.core.completion.Outcome;
import io.graphlane.testkit.ledger.RetentionLedger;
import io.graphlane.testkit.sim.SimBackend;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

/**
 * One scenario in progress: its seeded plan, its manual-time device and retention ledger, the
 * faults waiting for their moment, and what the checks found. The soak thread drives the device
 * ({@link #driveUntil}); actors submit to it from their own threads, and the driver parks until
 * they post something, so device time is virtual and a scenario costs no real device time.
 */
public final class ScenarioRun {
    /** How long the driver parks when nothing was posted, before it looks at its faults and guards again. */
    private static final Duration IDLE_PARK = Duration.ofMillis(1);

    private final long seed;
    private final SplittableRandom random;
    private final SimBackend sim;
    private final RetentionLedger ledger;
    private final Thread driver = Thread.currentThread();
    private final long wallDeadline;
    private final long virtualBudgetNanos;
    /** Holds of the plan not yet decided; the driver decides each once it started. */
    private final java.util.concurrent.ConcurrentLinkedQueue<PlannedHold> pending = new java.util.concurrent.ConcurrentLinkedQueue<>();
    private final java.util.concurrent.atomic.AtomicInteger holdCount = new java.util.concurrent.atomic.AtomicInteger();
    private final Map<String, Boolean> decided = new ConcurrentHashMap<>();
    private final List<Trigger> triggers = new ArrayList<>();
    private final List<Runnable> everyRound = new ArrayList<>();
    private final List<String> problems = new CopyOnWriteArrayList<>();
    private final List<String> notes = new CopyOnWriteArrayList<>();
    private final java.util.Set<String> sharedOutputs = ConcurrentHashMap.newKeySet();
    private final List<java.util.concurrent.CompletableFuture<?>> mustEnd = new ArrayList<>();
    private int earlyReleases;
    private String hang;
    private int round;

    /** A fault waiting for its moment: a driver round, or the start of a hold. */
    private static final class Trigger {
        final int round;
        final String hold;
        final Runnable action;
        boolean fired;

        Trigger(int round, String hold, Runnable action) {
            this.round = round;
            this.hold = hold;
            this.action = action;
        }
    }

    ScenarioRun(long seed, Duration wallBudget, Duration virtualBudget) {
        this.seed = seed;
        this.random = new SplittableRandom(seed);
        this.ledger = new RetentionLedger();
        this.sim = SimBackend.builder().name("soak").manualTime().seed(seed).jitter(Duration.ofNanos(2_000)).ledger(ledger).build();
        this.wallDeadline = System.nanoTime() + wallBudget.toNanos();
        this.virtualBudgetNanos = virtualBudget.toNanos();
    }

    /** The scenario's seed. */
    public long seed() {
        return seed;
    }

    /** The plan's random source (the soak thread only). */
    public SplittableRandom random() {
        return random;
    }

    /** The simulated device, on manual time. */
    public SimBackend sim() {
        return sim;
    }

    /** The ledger every retained value, lease and stage output is recorded in. */
    public RetentionLedger ledger() {
        return ledger;
    }

    /** The driver round now (one round = drive the device, apply faults, decide started holds). */
    public int round() {
        return round;
    }

    /** A hold of the plan and how the driver decides it: failing with {@code failure}, or succeeding if null. */
    private record PlannedHold(String name, Throwable failure) { }

    /**
     * A new hold of the plan, decided by the driver once it started: failing with {@code failure}, or
     * succeeding if null. Any thread (a stage program plans on the engine's thread).
     */
    public String holdOf(String prefix, Throwable failure) {
        String name = prefix + "-h" + holdCount.getAndIncrement();
        pending.add(new PlannedHold(name, failure));
        return name;
    }

    /** Runs {@code action} on the soak thread at driver round {@code atRound}. */
    public void atRound(int atRound, Runnable action) {
        triggers.add(new Trigger(atRound, null, action));
    }

    /** Runs {@code action} on the soak thread at every driver round, before the device runs. */
    public void everyRound(Runnable action) {
        everyRound.add(action);
    }

    /** Runs {@code action} on the soak thread once hold {@code hold} has started (its work is running). */
    public void whenStarted(String hold, Runnable action) {
        triggers.add(new Trigger(-1, hold, action));
    }

    /** Adds {@code stage} to what must end before the scenario's workload counts as ended. */
    public void mustEnd(java.util.concurrent.CompletionStage<?> stage) {
        java.util.concurrent.CompletableFuture<?> f = stage.toCompletableFuture();
        f.whenComplete((v, e) -> wake());
        mustEnd.add(f);
    }

    /** Whether everything added with {@link #mustEnd} has ended. */
    boolean extraEnded() {
        for (java.util.concurrent.CompletableFuture<?> f : mustEnd) {
            if (!f.isDone()) {
                return false;
            }
        }
        return true;
    }

    /** Notes what happened (faults fired, how runs ended), shown with a failing scenario's problems. */
    public void note(String what) {
        notes.add(what);
    }

    /**
     * Marks {@code entry} as an output freed only when every holder let go: if the device is lost, a
     * holder that is leaked on purpose keeps it unreleased, on purpose too.
     */
    public void sharedOutput(RetentionLedger.Entry entry) {
        sharedOutputs.add(entry.name());
    }

    /** Records a broken law found by a check. */
    public void problem(String what) {
        problems.add(what);
    }

    /** Records a release that happened while the work that uses the value was still running. */
    public synchronized void earlyRelease(String what) {
        earlyReleases++;
        problems.add("early release: " + what);
    }

    /** True if hold {@code name} started and was not decided yet, so its work is certainly still running. */
    public boolean isRunning(String hold) {
        return sim.isStarted(hold) && !decided.containsKey(hold);
    }

    /** Wakes the driver (something it waits for may have ended). */
    public void wake() {
        LockSupport.unpark(driver);
    }

    /**
     * Drives the device, fires due faults and decides started holds until {@code done}; false (and
     * the scenario is a hang) if the virtual-time budget or the wall-clock guard ran out first.
     */
    public boolean driveUntil(BooleanSupplier done, String phase) {
        if (hang != null) {
            return false;
        }
        while (true) {
            fireTriggers();
            sim.runUntilIdle();
            decideStartedHolds();
            if (done.getAsBoolean()) {
                return true;
            }
            if (sim.now().toNanos() > virtualBudgetNanos) {
                hang = phase + ": still running after " + sim.now().toNanos() / 1_000 + " µs of device time (budget "
                        + virtualBudgetNanos / 1_000 + " µs)";
                return false;
            }
            if (System.nanoTime() > wallDeadline) {
                hang = phase + ": did not end within the wall-clock guard (round " + round + ", device idle at "
                        + sim.now().toNanos() / 1_000 + " µs)";
                return false;
            }
            sim.awaitActivity(IDLE_PARK);
            round++;
        }
    }

    /** Whether the scenario's wall-clock guard ran out (a scenario that does not drive the device checks it itself). */
    public boolean wallExpired() {
        return System.nanoTime() > wallDeadline;
    }

    /** Records that the scenario did not end within its budget while in {@code phase} (the first such record counts). */
    public void hung(String phase) {
        if (hang == null) {
            hang = phase;
        }
    }

    /** Lets every hold still undecided succeed, so nothing of the plan keeps a lane busy after the scenario. */
    void releaseAllHolds() {
        PlannedHold h;
        while ((h = pending.poll()) != null) {
            decided.put(h.name(), Boolean.TRUE);
            sim.release(h.name());
        }
    }

    private void fireTriggers() {
        everyRound.forEach(Runnable::run);
        for (int i = 0; i < triggers.size(); i++) {
            Trigger t = triggers.get(i);
            if (!t.fired && (t.hold == null ? round >= t.round : sim.isStarted(t.hold))) {
                t.fired = true;
                t.action.run();
            }
        }
    }

    private void decideStartedHolds() {
        for (java.util.Iterator<PlannedHold> it = pending.iterator(); it.hasNext(); ) {
            PlannedHold h = it.next();
            if (sim.isStarted(h.name())) {
                it.remove();
                decided.put(h.name(), Boolean.TRUE);
                if (h.failure() == null) {
                    sim.release(h.name());
                } else {
                    sim.fail(h.name(), h.failure());
                }
            }
        }
    }

    /** What the checks found, once the scenario is over. */
    ScenarioResult result(String kind) {
        int leaks = 0;
        int early = earlyReleases;
        List<String> all = new ArrayList<>(problems);
        List<String> violations = new ArrayList<>(ledger.violations());
        if (sim.isLost()) {
            // A shared output whose holder the lost device leaked on purpose is never freed, on purpose:
            // accepted while there are no more such outputs than values the device reported leaked.
            List<String> unfreed = violations.stream().filter(v -> v.endsWith(" was never released")
                    && sharedOutputs.contains(v.substring(v.indexOf('\'') + 1, v.lastIndexOf('\'')))).toList();
            if (!unfreed.isEmpty() && unfreed.size() <= sim.leaks().size()) {
                violations.removeAll(unfreed);
                notes.add(unfreed.size() + " stage outputs held by work of the lost device stay unfreed on purpose");
            }
        }
        for (String v : violations) {
            if (v.contains(" was never released") || v.contains(" was leaked (") || v.contains("leak was never reported")) {
                leaks++;
            } else {
                early++;
            }
            all.add(v);
        }
        if (hang != null) {
            all.add("hang: " + hang);
        }
        return new ScenarioResult(seed, kind, leaks, early, hang != null, List.copyOf(all), List.copyOf(notes));
    }

    /** A failure outcome the plan gives failing work. */
    static Outcome failure(String what) {
        return Outcome.failure(new IllegalStateException(what));
    }
}
