package io.graphlane.inference.pipeline;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.inference.api.FinishReason;
import io.graphlane.inference.api.GenerationListener;
import io.graphlane.inference.api.GenerationRefusedException;
import io.graphlane.inference.api.GenerationRequest;
import io.graphlane.inference.api.GenerationResult;
import io.graphlane.inference.llama.LlamaConfig;
import io.graphlane.inference.model.Fixture;
import io.graphlane.inference.model.ModelDirectory;
import io.graphlane.scheduler.pipeline.KvBudget;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.bytedeco.javacpp.Pointer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The embedded pipeline admits by KV-cache memory: on the tiny-llama fixture (4 layers, 2 kv heads of 16, 256
 * positions) with a budget of four requests of the model's maximum length, 64 such requests all finish, never holding
 * more than the budget, and the native memory they take stays at the budget rather than growing with the requests.
 */
class KvBudgetPipelineTest {
    private static final ActorTestKit TESTKIT = ActorTestKit.create();
    /** Four requests of 256 positions at 4 layers × 2 × 32 features × 4 bytes (1 KiB) per position. */
    private static final long BUDGET = 4 * 256 * 1024L;

    @AfterAll
    static void shutdown() {
        TESTKIT.shutdownTestKit();
    }

    @ParameterizedTest(name = "{0} stages x {1} shards")
    @CsvSource({"2,1", "1,2"})
    void sixtyFourRequestsOfTheLongestLengthRunWithinTheBudgetAndAllFinish(int stages, int shards) throws Exception {
        LlamaConfig config = ModelDirectory.open(Fixture.dir("")).config();
        int maxPositions = config.maxPositions();
        try (InferencePipeline model = InferencePipeline.builder().model(Fixture.dir("")).stages(stages).tensorParallel(shards)
                .kvBudget(BUDGET).actorSystem(TESTKIT.system()).build()) {
            KvBudget budget = model.kvBudget();
            assertEquals(config.layerCount() * 2L * config.kvWidth() * Float.BYTES, budget.bytesPerPosition(),
                    "what one position takes over every stage and shard");
            assertEquals(4 * maxPositions, budget.positions());

            long nativeBefore = Pointer.totalBytes();
            AtomicLong mostReserved = new AtomicLong();
            AtomicLong mostNative = new AtomicLong();
            List<CompletableFuture<GenerationResult>> results = new ArrayList<>();
            for (int r = 0; r < 64; r++) {
                GenerationRequest longest = GenerationRequest.greedy(List.of(1 + r), maxPositions - 1);
                results.add(model.submit(longest, new GenerationListener() {
                    @Override
                    public void onToken(int tokenId) {
                        mostReserved.accumulateAndGet(model.kvReservedBytes(), Math::max);
                        mostNative.accumulateAndGet(Pointer.totalBytes(), Math::max);
                    }
                }).result().toCompletableFuture());
            }
            for (CompletableFuture<GenerationResult> result : results) {
                GenerationResult done = result.get(120, TimeUnit.SECONDS);
                assertEquals(FinishReason.LENGTH, done.finishReason());
                assertEquals(maxPositions - 1, done.generatedIds().size());
            }
            assertTrue(mostReserved.get() <= BUDGET, "reserved at most the budget: " + mostReserved.get());
            assertEquals(BUDGET, mostReserved.get(), "four ran at once, filling the budget");
            // Without the budget the 64 caches would take 64 x 256 KiB = 16 MiB; with it they take the 1 MiB reserved (each
            // cache grows no further than its request's reservation), plus the stages' step buffers (measured: 14 KiB).
            long grew = mostNative.get() - nativeBefore;
            assertTrue(grew < BUDGET + 512 * 1024, "native memory grew by " + grew + " bytes for a budget of " + BUDGET);
        }
    }

    @ParameterizedTest(name = "{0} stages")
    @CsvSource({"1", "2"})
    void aRequestLargerThanTheWholeBudgetIsRefusedNamingItsLengthsAndTheBudget(int stages) throws Exception {
        try (InferencePipeline model = InferencePipeline.builder().model(Fixture.dir("")).stages(stages)
                .kvBudget(100 * 1024L).actorSystem(TESTKIT.system()).build()) {
            GenerationRefusedException refused = assertThrows(GenerationRefusedException.class,
                    () -> model.submit(GenerationRequest.greedy(List.of(1, 2, 3), 120), new GenerationListener() { }));
            assertEquals(GenerationRefusedException.Reason.INVALID, refused.reason());
            assertEquals("max_tokens", refused.field().orElseThrow());
            String message = refused.getMessage();
            assertTrue(message.contains("the prompt (3 tokens) plus max_tokens (120) is 123 positions"), message);
            assertTrue(message.contains("budget of 100 positions (100.0 KiB)"), message);
            assertTrue(message.contains("max_tokens of at most 97"), message);
            assertEquals(0, model.kvReservedBytes(), "a refusal reserves nothing");
            // What fits runs.
            GenerationResult fits = model.submit(GenerationRequest.greedy(List.of(1, 2, 3), 97), new GenerationListener() { })
                    .result().toCompletableFuture().get(60, TimeUnit.SECONDS);
            assertEquals(97, fits.generatedIds().size());
        }
    }
}
