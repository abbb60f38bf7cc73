package io.graphlane.inference.pipeline;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.inference.api.FinishReason;
import io.graphlane.inference.api.GenerationListener;
import io.graphlane.inference.api.GenerationRefusedException;
import io.graphlane.inference.api.GenerationRequest;
import io.graphlane.inference.api.GenerationResult;
import io.graphlane.inference.api.ServingStats;
import io.graphlane.inference.model.Fixture;
import io.graphlane.inference.sampling.SamplingParams;
import io.graphlane.scheduler.pipeline.PipelineSettings;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The pipelined model against the fixture's independent reference: whatever the split into
 * stages and however many requests are in flight, not a single greedy token changes.
 */
class InferencePipelineTest {
    private static final ActorTestKit TESTKIT = ActorTestKit.create();

    @AfterAll
    static void shutdown() {
        TESTKIT.shutdownTestKit();
    }

    private static List<Integer> list(int[] a) {
        List<Integer> l = new ArrayList<>();
        for (int v : a) {
            l.add(v);
        }
        return l;
    }

    @ParameterizedTest(name = "{0} stages, layout ''{1}''")
    @CsvSource({"1,''", "2,''", "3,''", "4,''", "2,sharded", "3,sharded"})
    void allPromptsInFlightAtOnceGiveTheReferenceGreedyTokens(int stages, String layout) throws Exception {
        List<Fixture.Prompt> prompts = Fixture.prompts();
        try (InferencePipeline model = InferencePipeline.builder().model(Fixture.dir(layout)).stages(stages)
                .actorSystem(TESTKIT.system()).build()) {
            List<GenerationRequest> requests = new ArrayList<>();
            for (Fixture.Prompt p : prompts) {
                requests.add(GenerationRequest.greedy(list(p.ids()), 16));
            }
            List<GenerationResult> results = model.generateAll(requests, Duration.ofSeconds(60));
            for (int i = 0; i < prompts.size(); i++) {
                assertEquals(list(prompts.get(i).greedy16()), results.get(i).generatedIds(), "prompt " + i + " at " + stages + " stages");
                assertEquals(FinishReason.LENGTH, results.get(i).finishReason());
            }
        }
    }

    @Test
    void tokensStreamInOrderAndMatchTheResult() throws Exception {
        Fixture.Prompt p = Fixture.prompts().get(0);
        try (InferencePipeline model = InferencePipeline.builder().model(Fixture.dir("")).stages(2).actorSystem(TESTKIT.system()).build()) {
            List<Integer> streamed = new CopyOnWriteArrayList<>();
            GenerationResult r = model.submit(GenerationRequest.greedy(list(p.ids()), 16), new GenerationListener() {
                @Override
                public void onToken(int tokenId) {
                    streamed.add(tokenId);
                }
            }).result().toCompletableFuture().get();
            assertEquals(r.generatedIds(), streamed);
        }
    }

    @Test
    void seededSamplingIsReproducibleAcrossStageSplits() throws Exception {
        Fixture.Prompt p = Fixture.prompts().get(1);
        GenerationRequest sampled = new GenerationRequest(list(p.ids()), 12, new SamplingParams(0.8, 0.9, 42), Optional.empty());
        List<Integer> one;
        try (InferencePipeline model = InferencePipeline.builder().model(Fixture.dir("")).stages(1).actorSystem(TESTKIT.system()).build()) {
            one = model.generateAll(List.of(sampled), Duration.ofSeconds(60)).get(0).generatedIds();
        }
        try (InferencePipeline model = InferencePipeline.builder().model(Fixture.dir("")).stages(3).actorSystem(TESTKIT.system()).build()) {
            assertEquals(one, model.generateAll(List.of(sampled), Duration.ofSeconds(60)).get(0).generatedIds());
        }
    }

    @Test
    void invalidAndExcessRequestsAreRefusedAtOnce() throws Exception {
        try (InferencePipeline model = InferencePipeline.builder().model(Fixture.dir("")).stages(2)
                .settings(PipelineSettings.defaults(2).withRequestLimits(1, 1)).actorSystem(TESTKIT.system()).build()) {
            GenerationRefusedException outside = assertThrows(GenerationRefusedException.class,
                    () -> model.submit(GenerationRequest.greedy(List.of(1, 99999), 4), new GenerationListener() { }));
            assertEquals(GenerationRefusedException.Reason.INVALID, outside.reason());
            assertTrue(outside.getMessage().contains("99999"), outside.getMessage());
            GenerationRefusedException tooLong = assertThrows(GenerationRefusedException.class,
                    () -> model.submit(GenerationRequest.greedy(List.of(1), model.maxSequenceLength()), new GenerationListener() { }));
            assertEquals(GenerationRefusedException.Reason.INVALID, tooLong.reason());
            // One active and one queued fit; the third is refused as overload. The first two generate as long as
            // the model allows, so neither can have ended by the time the third is submitted.
            int longest = model.maxSequenceLength() - 2;
            model.submit(GenerationRequest.greedy(List.of(1, 2), longest), new GenerationListener() { });
            model.submit(GenerationRequest.greedy(List.of(3, 4), longest), new GenerationListener() { });
            GenerationRefusedException full = assertThrows(GenerationRefusedException.class,
                    () -> model.submit(GenerationRequest.greedy(List.of(5), 8), new GenerationListener() { }));
            assertEquals(GenerationRefusedException.Reason.OVERLOADED, full.reason());
        }
    }

    @Test
    void servingStatsReportEachStagesWorkKvCachePositionsAndLanes() throws Exception {
        Fixture.Prompt first = Fixture.prompts().get(0);
        Fixture.Prompt second = Fixture.prompts().get(1);
        try (InferencePipeline model = InferencePipeline.builder().model(Fixture.dir("")).stages(2).actorSystem(TESTKIT.system()).build()) {
            ServingStats idle = model.servingStats().orElseThrow();
            assertEquals(List.of("stage-0", "stage-1"), idle.stages().stream().map(ServingStats.Stage::name).toList());
            assertEquals(List.of("stage-0", "stage-1"), idle.lanes().stream().map(ServingStats.Lane::name).toList());
            assertTrue(idle.stages().stream().allMatch(s -> s.busyNanos() == 0 && s.kvCachePositions() == 0), idle.toString());

            // When the first token arrives every stage has run the prompt and the request is still running: each stage
            // holds at least the prompt's positions and at most the prompt's and the tokens generated so far.
            java.util.concurrent.atomic.AtomicReference<List<Long>> atFirstToken = new java.util.concurrent.atomic.AtomicReference<>();
            GenerationResult a = model.submit(GenerationRequest.greedy(list(first.ids()), 8), new GenerationListener() {
                @Override
                public void onToken(int tokenId) {
                    atFirstToken.compareAndSet(null, model.servingStats().orElseThrow().stages().stream()
                            .map(ServingStats.Stage::kvCachePositions).toList());
                }
            }).result().toCompletableFuture().get(60, java.util.concurrent.TimeUnit.SECONDS);
            assertTrue(a.generatedIds().size() > 1, "the request ran past its first token: " + a.generatedIds());
            for (long held : atFirstToken.get()) {
                assertTrue(held >= first.ids().length && held < first.ids().length + a.generatedIds().size(), atFirstToken.get().toString());
            }
            // Once it ended, the engine frees its caches on every stage at once (no later work is needed).
            ServingStats afterA = settled(model);
            for (ServingStats.Stage stage : afterA.stages()) {
                assertEquals(0, stage.kvCachePositions(), stage.name() + " freed the ended request's caches: " + afterA);
                assertTrue(stage.busyNanos() > 0, stage.name() + " ran work");
            }

            model.generateAll(List.of(GenerationRequest.greedy(list(second.ids()), 4)), Duration.ofSeconds(60)).get(0);
            ServingStats afterB = settled(model);
            for (int k = 0; k < 2; k++) {
                assertEquals(0, afterB.stages().get(k).kvCachePositions(), afterB.toString());
                assertTrue(afterB.stages().get(k).busyNanos() > afterA.stages().get(k).busyNanos(), "stage " + k + " busy time grows");
            }
            ServingStats settled = settled(model);
            assertEquals(0, settled.runningRequests(), settled.toString());
            assertEquals(0, settled.waitingRequests(), settled.toString());
            assertTrue(settled.lanes().stream().allMatch(l -> l.depth() == 0), settled.toString());
        }
    }

    /**
     * The stats once the engine, the lanes and the caches have settled after the last request ended (they publish right
     * after the step that ended it and the change works that freed its caches), or the last seen after 30 s.
     */
    private static ServingStats settled(InferencePipeline model) {
        long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(30);
        ServingStats stats = model.servingStats().orElseThrow();
        while (!(stats.runningRequests() == 0 && stats.waitingRequests() == 0 && stats.lanes().stream().allMatch(l -> l.depth() == 0)
                && stats.stages().stream().allMatch(s -> s.kvCachePositions() == 0)) && System.nanoTime() < deadline) {
            Thread.onSpinWait();
            stats = model.servingStats().orElseThrow();
        }
        return stats;
    }

    @Test
    void cancellingAGenerationEndsItWithACancellation() throws Exception {
        try (InferencePipeline model = InferencePipeline.builder().model(Fixture.dir("")).stages(2).actorSystem(TESTKIT.system()).build()) {
            java.util.concurrent.CompletableFuture<Void> firstToken = new java.util.concurrent.CompletableFuture<>();
            var generation = model.submit(GenerationRequest.greedy(List.of(1, 2, 3), model.maxSequenceLength() - 3), new GenerationListener() {
                @Override
                public void onToken(int tokenId) {
                    firstToken.complete(null);
                }
            });
            firstToken.get(60, java.util.concurrent.TimeUnit.SECONDS);
            generation.cancel();
            var e = assertThrows(java.util.concurrent.ExecutionException.class,
                    () -> generation.result().toCompletableFuture().get(60, java.util.concurrent.TimeUnit.SECONDS));
            assertInstanceOf(io.graphlane.scheduler.pipeline.RequestCancelledException.class, e.getCause());
        }
    }

    @Test
    void closingFailsRequestsStillInFlight() throws Exception {
        InferencePipeline model = InferencePipeline.builder().model(Fixture.dir("")).stages(2).actorSystem(TESTKIT.system()).build();
        var generation = model.submit(GenerationRequest.greedy(List.of(1, 2, 3), 200), new GenerationListener() { });
        model.close();
        var e = assertThrows(java.util.concurrent.ExecutionException.class, () -> generation.result().toCompletableFuture().get());
        assertInstanceOf(GenerationRefusedException.class, e.getCause());
        assertArrayEquals(new int[0], new int[0]);
    }
}
