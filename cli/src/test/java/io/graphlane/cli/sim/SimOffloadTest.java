package io.graphlane.cli.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.core.GraphlaneException;
import io.graphlane.core.trace.TraceRecorder;
import io.graphlane.inference.offload.OffloadPlan;
import io.graphlane.inference.offload.TransferSubmissions;
import io.graphlane.scheduler.pipeline.PipelineSettings;
import io.graphlane.scheduler.pipeline.RequestCancelledException;
import io.graphlane.testkit.ledger.RetentionLedger;
import io.graphlane.testkit.sim.SimBackend;
import io.graphlane.testkit.sim.SimCompletion;
import io.graphlane.testkit.sim.SimExecutor;
import io.graphlane.testkit.sim.SimTransferBackend;
import io.graphlane.testkit.sim.SimWeight;
import io.graphlane.testkit.sim.SimWork;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** Streamed layers on the simulated device, through the pipeline engine and its lane actors. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class SimOffloadTest {
    private static final long LAYER = 1000;
    private static final int LAYERS = 8;

    /** A pipeline over {@code stages} stages of {@link #LAYERS} layers in all, with {@code budget} bytes of device weights. */
    private static final class Rig implements AutoCloseable {
        final RetentionLedger ledger = new RetentionLedger();
        final SimBackend backend = SimBackend.builder().ledger(ledger).build();
        final SimTransferBackend transfer;
        final TransferSubmissions<SimExecutor, SimCompletion, SimWork> submissions = SimOffloadProgram.submissions(backend);
        final SimOffloadProgram program;
        final SimPipeline pipeline;

        Rig(int stages, long budget, int lookahead, Duration copy) {
            List<long[]> layers = new ArrayList<>();
            for (int s = 0; s < stages; s++) {
                long[] bytes = new long[LAYERS / stages + (s < LAYERS % stages ? 1 : 0)];
                Arrays.fill(bytes, LAYER);
                layers.add(bytes);
            }
            OffloadPlan plan = OffloadPlan.plan(budget, 0, layers, lookahead);
            // The device tier holds exactly what the plan says it may: a promotion beyond it is refused and fails the step.
            long streamedWindow = plan.peakDeviceBytes() - plan.stages().stream().mapToLong(OffloadPlan.Stage::residentBytes).sum();
            transfer = new SimTransferBackend(backend, copy, 0, streamedWindow);
            program = new SimOffloadProgram(plan, Duration.ZERO, transfer, submissions, 997);
            pipeline = new SimPipeline(program, backend, b -> submissions, PipelineSettings.defaults(stages).withMaxInFlightBatches(1),
                    TraceRecorder.DISABLED);
        }

        List<List<Integer>> run(int requests, int tokens) throws Exception {
            List<int[]> prompts = new ArrayList<>();
            for (int i = 0; i < requests; i++) {
                prompts.add(new int[] {3 + i, 7 * i + 1});
            }
            return pipeline.runAll(prompts, tokens).stream().map(SimPipeline.Result::tokens).toList();
        }

        @Override
        public void close() throws Exception {
            pipeline.close();
        }
    }

    @ParameterizedTest(name = "{0} stage(s), {1} request(s)")
    @CsvSource({"1, 1", "1, 8", "2, 3", "3, 5", "4, 1", "4, 8"})
    void tokensWithABudgetEqualTokensWithout(int stages, int requests) throws Exception {
        List<List<Integer>> resident;
        try (Rig all = new Rig(stages, LAYERS * LAYER, 1, Duration.ofNanos(100_000))) {
            assertTrue(!all.program.offloadPlan().streams());
            resident = all.run(requests, 6);
        }
        // Each stage's window (lookahead + 1 layers) and one resident layer: every stage streams.
        int lookahead = stages <= 2 ? 1 : 0;
        try (Rig streamed = new Rig(stages, (stages * (lookahead + 1L) + 1) * LAYER, lookahead, Duration.ofNanos(100_000))) {
            assertTrue(streamed.program.offloadPlan().stages().stream().allMatch(OffloadPlan.Stage::streams));
            List<List<Integer>> tokens = streamed.run(requests, 6);
            assertEquals(resident, tokens);
            assertTrue(streamed.program.promotedCopies() > 0, "layers were promoted");
        }
    }

    @Test
    void everyPromotedLayerIsFreedOnceAfterItsLastReader() throws Exception {
        Rig rig = new Rig(2, 4 * LAYER, 1, Duration.ofNanos(200_000));
        try (rig) {
            rig.run(4, 5);
        }
        assertTrue(rig.ledger.awaitSettled(Duration.ofSeconds(10)));
        rig.ledger.assertReleasedExactlyOnce();
        rig.ledger.assertNeverReleasedBeforeCompletion();
        long promoted = rig.program.promotedCopies();
        assertTrue(promoted > 0);
        assertEquals(promoted, rig.program.promotedCopiesFreed(), "every promoted copy freed");
        assertEquals(0, rig.transfer.usedBytes(), "the device tier is empty again");
        assertEquals(0, rig.submissions.pendingPromotions());
        // Streaming held no more than each stage's window: 2 layers of lookahead 1 on each of the 2 stages.
        assertTrue(rig.transfer.peakBytes() <= 4 * LAYER, "peak " + rig.transfer.peakBytes());
    }

    @Test
    void aFailingTransferFailsOnlyTheStepThatReadsIt() throws Exception {
        try (Rig rig = new Rig(1, 2 * LAYER, 1, Duration.ofNanos(100_000))) {
            List<List<Integer>> before = rig.run(1, 3);
            rig.transfer.failNextCopy(new IllegalStateException("copy engine fault"));
            SimPipeline.Started failing = rig.pipeline.start(new int[] {3, 1}, 3);
            ExecutionException e = assertThrows(ExecutionException.class, () -> failing.result().get(30, TimeUnit.SECONDS));
            assertTrue(causeChain(e).contains("copy engine fault"), causeChain(e));
            // The lanes are not poisoned: the same request runs again and gives the same tokens.
            assertEquals(before, rig.run(1, 3));
        }
    }

    @Test
    void cancellingARequestMidTransferFreesNothingStillInFlight() throws Exception {
        Rig rig = new Rig(1, 2 * LAYER, 1, Duration.ofNanos(100_000));
        try (rig) {
            rig.transfer.holdNextCopy("stuck-copy");
            SimPipeline.Started started = rig.pipeline.start(new int[] {3, 1}, 3);
            rig.backend.whenStarted("stuck-copy").toCompletableFuture().get(30, TimeUnit.SECONDS);
            SimWeight inFlight = rig.transfer.lastPromoted();
            try {
                rig.pipeline.pipeline().cancel(started.id());
                ExecutionException e = assertThrows(ExecutionException.class, () -> started.result().get(30, TimeUnit.SECONDS));
                assertInstanceOf(RequestCancelledException.class, e.getCause());
                // The request ended, its copy still runs: its destination and its bytes stay.
                assertFalse(inFlight.isFreed(), "a copy still in flight was freed");
                assertTrue(rig.transfer.usedBytes() >= LAYER, "in flight: " + rig.transfer.usedBytes());
            } finally {
                rig.backend.release("stuck-copy");
            }
            assertTrue(rig.ledger.awaitSettled(Duration.ofSeconds(30)));
            // Another request runs on the same lanes afterwards.
            assertEquals(3, rig.run(1, 3).get(0).size());
        }
        assertTrue(rig.ledger.awaitSettled(Duration.ofSeconds(10)));
        rig.ledger.assertReleasedExactlyOnce();
        rig.ledger.assertNeverReleasedBeforeCompletion();
        assertEquals(0, rig.transfer.usedBytes(), "every copy's bytes came back once it completed");
        assertEquals(rig.program.promotedCopies(), rig.program.promotedCopiesFreed());
    }

    @Test
    void aBudgetSmallerThanTheLargestLayerIsRefusedNamingBoth() {
        GraphlaneException e = assertThrows(GraphlaneException.class,
                () -> OffloadPlan.plan(999, 0, List.of(new long[] {LAYER, 1500, LAYER}), 1));
        assertTrue(e.getMessage().contains("999 bytes") && e.getMessage().contains("1500 bytes"), e.getMessage());
        assertInstanceOf(GraphlaneException.class, e);
    }

    private static String causeChain(Throwable t) {
        StringBuilder b = new StringBuilder();
        for (Throwable c = t; c != null; c = c.getCause()) {
            b.append(c).append(" <- ");
        }
        return b.toString();
    }
}
