package io.graphlane.inference.offload;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.core.GraphlaneException;
import io.graphlane.inference.api.GenerationRequest;
import io.graphlane.inference.api.GenerationResult;
import io.graphlane.inference.demo.SeededModels;
import io.graphlane.inference.llama.LlamaConfig;
import java.nio.file.Path;
import io.graphlane.inference.pipeline.InferencePipeline;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Streamed layers on CPU lanes, on a seeded F32 model of 8 small layers: the greedy tokens with a device weights budget
 * equal those with every layer resident, at 1 to 4 stages and 1 to 8 requests.
 */
class OffloadPipelineTest {
    private static final ActorTestKit TESTKIT = ActorTestKit.create();
    private static final LlamaConfig CONFIG = new LlamaConfig(64, 128, 8, 4, 2, 16, 256, 1e-5f, 10000f, false, false, false, 256);
    @TempDir
    static Path models;
    private static Path model;

    @BeforeAll
    static void writeModel() {
        model = SeededModels.write(models.resolve("eight-layers"), CONFIG);
    }

    @AfterAll
    static void shutdown() {
        TESTKIT.shutdownTestKit();
    }

    /** One layer's F32 bytes: q, k, v, o, the three MLP matrices and two norms. */
    private static long layerBytes() {
        long h = CONFIG.hiddenSize();
        long kv = CONFIG.kvWidth();
        return Float.BYTES * (2 * h * h + 2 * h * kv + 3 * h * CONFIG.intermediateSize() + 2 * h);
    }

    /** The embedding, the head and the final norm. */
    private static long fixedBytes() {
        return Float.BYTES * (2L * CONFIG.vocabSize() * CONFIG.hiddenSize() + CONFIG.hiddenSize());
    }

    private static List<GenerationRequest> requests(int n) {
        List<GenerationRequest> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            out.add(GenerationRequest.greedy(List.of(1 + i, 17 + 3 * i, 40 + i), 6));
        }
        return out;
    }

    private static List<List<Integer>> run(int stages, Long budget, int lookahead, List<String> plan, int requests) throws Exception {
        InferencePipeline.Builder b = InferencePipeline.builder().model(model).stages(stages).actorSystem(TESTKIT.system());
        if (budget != null) {
            b = b.deviceWeightsBudget(budget).offloadLookahead(lookahead).onOffloadPlan(plan::add);
        }
        try (InferencePipeline pipeline = b.build()) {
            return pipeline.generateAll(requests(requests), Duration.ofSeconds(120)).stream().map(GenerationResult::generatedIds).toList();
        }
    }

    @ParameterizedTest(name = "{0} stage(s), {1} request(s), lookahead {2}, {3} resident layer(s) beyond the windows")
    @CsvSource({"1, 1, 1, 2", "1, 8, 2, 0", "2, 3, 0, 1", "2, 8, 1, 0", "3, 5, 0, 0", "4, 1, 0, 0", "4, 8, 0, 2"})
    void tokensWithABudgetEqualTokensWithEveryLayerResident(int stages, int requests, int lookahead, int extraResident) throws Exception {
        List<String> plan = new ArrayList<>();
        long budget = fixedBytes() + (stages * (lookahead + 1L) + extraResident) * layerBytes();
        List<List<Integer>> streamed = run(stages, budget, lookahead, plan, requests);
        List<List<Integer>> resident = run(stages, null, 0, new ArrayList<>(), requests);
        assertEquals(resident, streamed);
        assertEquals(stages + 1, plan.size(), plan.toString());
        assertTrue(plan.stream().skip(1).allMatch(line -> line.contains("S")), "every stage streams: " + plan);
        assertTrue(plan.get(0).contains((CONFIG.layerCount() - extraResident) + " streamed"), plan.get(0));
    }

    @Test
    void aBudgetBelowTheFixedWeightsAndTheLargestLayerIsRefusedNamingBoth() {
        long budget = fixedBytes() + layerBytes() - 1;
        GraphlaneException e = assertThrows(GraphlaneException.class, () -> run(1, budget, 1, new ArrayList<>(), 1));
        assertTrue(e.getMessage().contains("--device-weights-budget") && e.getMessage().contains("(" + budget + " bytes)")
                && e.getMessage().contains("(" + layerBytes() + " bytes)"), e.getMessage());
    }
}
