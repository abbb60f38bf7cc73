package io.graphlane.cli.soak;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.graphlane.actors.lane.LaneSettings;
import java.time.Duration;
import java.util.Objects;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;

/**
 * The seeded fault soak: runs scenarios (random lane graphs, pipeline-engine workloads and
 * materialization-supervisor units on the simulated device; CPU collective groups that lose a member)
 * with injected faults, in one actor system, and checks after each that nothing leaked, nothing was
 * released before its exact completion, every request, graph and unit ended exactly once, and nothing hung. Scenario {@code i} of a soak with seed {@code S} has seed
 * {@link #scenarioSeed(long, int)}; a soak of one scenario with that seed replays its plan.
 *
 * <p>It lives in the CLI module because it drives the scheduler's graph runner and pipeline engine
 * over the testkit's simulated backend, and testkit may not depend on the scheduler.
 */
public final class SoakEngine implements AutoCloseable {
    /** The golden-ratio step that spreads scenario seeds over the whole 64-bit range. */
    private static final long SEED_STEP = 0x9E3779B97F4A7C15L;

    /**
     * How scenarios are bounded and which extra faults they get.
     *
     * @param wallBudget the wall-clock guard of one scenario; beyond it the scenario is a hang
     * @param virtualBudget the device time one scenario may use; beyond it the scenario is a hang
     * @param injector extra faults added to every scenario
     */
    public record Options(Duration wallBudget, Duration virtualBudget, FaultInjector injector) {
        public Options {
            Objects.requireNonNull(wallBudget, "wallBudget");
            Objects.requireNonNull(virtualBudget, "virtualBudget");
            Objects.requireNonNull(injector, "injector");
        }

        /** A 10 s wall-clock guard, 1 s of device time, no extra faults. */
        public static Options defaults() {
            return new Options(Duration.ofSeconds(10), Duration.ofSeconds(1), FaultInjector.NONE);
        }

        public Options withWallBudget(Duration d) {
            return new Options(d, virtualBudget, injector);
        }

        public Options withInjector(FaultInjector i) {
            return new Options(wallBudget, virtualBudget, i);
        }
    }

    private final Options options;
    private final ActorSystem<Void> system;
    private final LaneSettings laneDefaults;

    public SoakEngine(Options options) {
        this.options = Objects.requireNonNull(options, "options");
        Config config = ConfigFactory.parseString("""
                pekko.log-dead-letters = off
                pekko.log-dead-letters-during-shutdown = off
                pekko.loglevel = ERROR
                """).withFallback(ConfigFactory.load());
        this.system = ActorSystem.create(Behaviors.empty(), "graphlane-soak", config);
        this.laneDefaults = LaneSettings.fromConfig(system.settings().config());
    }

    /** The seed of scenario {@code index} of a soak seeded with {@code seed}; scenario 0 has {@code seed} itself. */
    public static long scenarioSeed(long seed, int index) {
        return seed + index * SEED_STEP;
    }

    /** Runs {@code scenarios} scenarios from {@code seed}, telling {@code progress} after each. */
    public SoakReport run(int scenarios, long seed, Consumer<ScenarioResult> progress) {
        if (scenarios < 1) {
            throw new IllegalArgumentException("--scenarios must be >= 1, got " + scenarios);
        }
        long start = System.nanoTime();
        SoakReport.Builder report = new SoakReport.Builder();
        for (int i = 0; i < scenarios; i++) {
            ScenarioResult r = runScenario(scenarioSeed(seed, i));
            report.add(r);
            progress.accept(r);
        }
        return report.build((System.nanoTime() - start) / 1e9);
    }

    /** The kind of scenario of seed {@code scenarioSeed}: graph, pipeline, materialization or collective. */
    public static String kindOf(long scenarioSeed) {
        return kindOf(new SplittableRandom(scenarioSeed));
    }

    /** The first draw of a scenario's plan picks its kind: 55 in 100 graph, 25 pipeline, 10 materialization, 10 collective. */
    private static String kindOf(SplittableRandom planRandom) {
        int pick = planRandom.nextInt(100);
        return pick < 55 ? "graph" : pick < 80 ? "pipeline" : pick < 90 ? "materialization" : "collective";
    }

    /** Runs the one scenario of seed {@code scenarioSeed} and returns what the checks found. */
    public ScenarioResult runScenario(long scenarioSeed) {
        ScenarioRun run = new ScenarioRun(scenarioSeed, options.wallBudget(), options.virtualBudget());
        String kind = kindOf(run.random());
        try {
            switch (kind) {
                case "graph" -> new GraphScenario(run, system, laneDefaults).play(options.injector());
                case "pipeline" -> new PipelineScenario(run, system, laneDefaults).play(options.injector());
                case "materialization" -> new MaterializationScenario(run, system).play(options.injector());
                default -> new CollectiveScenario(run).play(options.injector());
            }
        } catch (RuntimeException e) {
            run.problem("the scenario threw " + e);
        }
        run.releaseAllHolds();
        run.sim().runUntilIdle();
        try {
            if (!run.sim().isLost()) {
                run.sim().close();
            }
        } catch (IllegalStateException e) {
            run.problem("device did not drain: " + e.getMessage());
        }
        try {
            run.ledger().awaitSettled(Duration.ofMillis(200));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return run.result(kind);
    }

    @Override
    public void close() throws Exception {
        system.terminate();
        system.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
    }
}
