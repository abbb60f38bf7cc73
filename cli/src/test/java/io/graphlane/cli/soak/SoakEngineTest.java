package io.graphlane.cli.soak;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.backend.cpu.nn.CpuNeuralOps;
import io.graphlane.backend.cpu.nn.CpuTensor;
import io.graphlane.testkit.ledger.RetentionLedger;
import io.graphlane.testkit.sim.SimCompletion;
import io.graphlane.testkit.sim.SimExecutor;
import io.graphlane.testkit.sim.SimWork;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The soak as CI runs it (2,000 seeded scenarios, every law kept), and proof that each check can
 * fail: a leak, an early release and a hang injected into a scenario are reported as such, with
 * the scenario's seed.
 */
class SoakEngineTest {
    private static final long SEED = 20_261_203L;
    private static SoakEngine engine;

    @BeforeAll
    static void start() {
        engine = new SoakEngine(SoakEngine.Options.defaults());
    }

    @AfterAll
    static void stop() throws Exception {
        engine.close();
    }

    @Test
    void twoThousandSeededFaultScenariosLeakNothingReleaseNothingEarlyAndNeverHang() {
        Map<String, Integer> kinds = new TreeMap<>();
        SoakReport report = engine.run(2_000, SEED, r -> kinds.merge(r.kind(), 1, Integer::sum));
        assertEquals(2_000, report.scenarios());
        assertEquals(List.of("collective", "graph", "materialization", "pipeline"), List.copyOf(kinds.keySet()), kinds.toString());
        assertTrue(kinds.values().stream().allMatch(n -> n >= 100), "every kind of scenario runs often: " + kinds);
        assertEquals(0, report.failures(), report.toText());
        assertEquals(0, report.leaks(), report.toText());
        assertEquals(0, report.earlyReleases(), report.toText());
        assertEquals(0, report.hangs(), report.toText());
        assertEquals(null, report.firstFailingSeed());
    }

    @Test
    void aValueNeverReleasedIsReportedAsALeakWithItsSeed() throws Exception {
        try (SoakEngine leaking = new SoakEngine(SoakEngine.Options.defaults()
                .withInjector(run -> run.ledger().acquire("forgotten lease")))) {
            long seed = SoakEngine.scenarioSeed(SEED, 3);
            SoakReport report = leaking.run(2, seed, r -> { });
            assertEquals(2, report.failures());
            assertTrue(report.leaks() >= 2, report.toText());
            assertEquals(seed, report.firstFailingSeed());
            assertTrue(report.firstProblems().contains("resource 'forgotten lease' was never released"), report.toText());
            assertTrue(report.toJson().contains("\"first_failing_seed\":" + seed), report.toJson());
        }
    }

    @Test
    void aReleaseBeforeTheExactCompletionIsReportedAsEarly() throws Exception {
        FaultInjector releaseEarly = run -> {
            SimExecutor lane = run.sim().forkExecutors(run.sim().rootExecutor(), 1).get(0);
            SimCompletion running = run.sim().submit(lane, SimWork.held("sabotage"));
            RetentionLedger.Entry lease = run.ledger().acquire("lease freed too soon").heldUntil(running);
            lease.close(); // the work that reads it has not even started
            run.sim().release("sabotage");
        };
        try (SoakEngine early = new SoakEngine(SoakEngine.Options.defaults().withInjector(releaseEarly))) {
            ScenarioResult r = early.runScenario(SEED);
            assertTrue(r.failed());
            assertEquals(SEED, r.seed());
            assertTrue(r.earlyReleases() >= 1, r.problems().toString());
            assertTrue(r.problems().stream().anyMatch(p -> p.startsWith("resource 'lease freed too soon'") && p.contains("was released at event")),
                    r.problems().toString());
            assertFalse(r.hang());
        }
    }

    @Test
    void aScenarioThatNeverEndsIsReportedAsAHang() throws Exception {
        SoakEngine.Options options = SoakEngine.Options.defaults().withWallBudget(Duration.ofMillis(300))
                .withInjector(run -> run.mustEnd(new CompletableFuture<Void>()));
        try (SoakEngine hanging = new SoakEngine(options)) {
            SoakReport report = hanging.run(1, SEED, r -> { });
            assertEquals(1, report.hangs(), report.toText());
            assertEquals(SEED, report.firstFailingSeed());
            assertTrue(report.firstProblems().stream().anyMatch(p -> p.startsWith("hang: ")), report.toText());
        }
    }

    @Test
    void nativeMemoryNeverFreedInACollectiveScenarioIsReportedWithItsSeed() throws Exception {
        long seed = firstSeedOfKind("collective");
        CpuNeuralOps ops = new CpuNeuralOps();
        List<CpuTensor> forgotten = new ArrayList<>();
        try (SoakEngine leaking = new SoakEngine(SoakEngine.Options.defaults()
                .withInjector(run -> forgotten.add(ops.fromHost(new float[64], 8, 8))))) {
            ScenarioResult r = leaking.runScenario(seed);
            assertEquals("collective", r.kind());
            assertEquals(seed, r.seed());
            assertTrue(r.problems().stream().anyMatch(p -> p.contains("bytes of native memory allocated during the scenario were never freed")),
                    r.problems().toString());
        } finally {
            forgotten.forEach(ops::release);
        }
    }

    @Test
    void aLeaseHandedToTheMaterializationSupervisorIsCheckedLikeEveryOther() throws Exception {
        long seed = firstSeedOfKind("materialization");
        try (SoakEngine leaking = new SoakEngine(SoakEngine.Options.defaults()
                .withInjector(run -> run.ledger().acquire("lease never handed over")))) {
            ScenarioResult r = leaking.runScenario(seed);
            assertEquals("materialization", r.kind());
            assertEquals(List.of("resource 'lease never handed over' was never released"), r.problems(), r.notes().toString());
            assertEquals(1, r.leaks());
        }
    }

    /** The first scenario of the CI soak whose plan is of {@code kind}. */
    private static long firstSeedOfKind(String kind) {
        for (int i = 0; ; i++) {
            long seed = SoakEngine.scenarioSeed(SEED, i);
            if (SoakEngine.kindOf(seed).equals(kind)) {
                return seed;
            }
        }
    }

    @Test
    void scenarioZeroHasTheSoaksOwnSeedSoAFailingSeedReplaysAlone() {
        assertEquals(SEED, SoakEngine.scenarioSeed(SEED, 0));
        long fifth = SoakEngine.scenarioSeed(SEED, 5);
        assertEquals(fifth, SoakEngine.scenarioSeed(fifth, 0));
        ScenarioResult alone = engine.runScenario(fifth);
        assertEquals(fifth, alone.seed());
        ScenarioResult again = engine.runScenario(fifth);
        assertEquals(alone.kind(), again.kind());
    }
}
