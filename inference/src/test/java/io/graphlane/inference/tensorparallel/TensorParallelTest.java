package io.graphlane.inference.tensorparallel;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.backend.cpu.nn.CpuTensor;
import io.graphlane.core.GraphlaneException;
import io.graphlane.inference.api.GenerationRequest;
import io.graphlane.inference.api.GenerationResult;
import io.graphlane.inference.llama.Segment;
import io.graphlane.inference.llama.StageInput;
import io.graphlane.inference.llama.StageOutput;
import io.graphlane.inference.model.Fixture;
import io.graphlane.inference.model.ModelDirectory;
import io.graphlane.inference.pipeline.InferencePipeline;
import io.graphlane.inference.stage.StagePlan;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** Tensor-parallel stages against the fixture's PyTorch reference: logits within 1e-4, greedy tokens exactly. */
class TensorParallelTest {
    private static final ActorTestKit TESTKIT = ActorTestKit.create();

    @AfterAll
    static void shutdown() {
        TESTKIT.shutdownTestKit();
    }

    @ParameterizedTest(name = "T={0}, {1} stage(s)")
    @CsvSource({"1,1", "1,2", "2,1", "2,2"})
    void shardedStagesGiveTheReferenceLogits(int degree, int stageCount) {
        ModelDirectory model = ModelDirectory.open(Fixture.dir(""));
        {
            List<TensorParallelStage<CpuTensor>> stages = TensorParallelStages.load(model,
                    StagePlan.balanced(model.config().layerCount(), stageCount), degree, s -> { });
            try {
                for (Fixture.Prompt p : Fixture.prompts()) {
                    List<Segment> segments = List.of(new Segment(1, 0, p.ids().length));
                    StageInput<CpuTensor> in = new StageInput.Tokens<>(segments, p.ids());
                    StageOutput<CpuTensor> out = null;
                    for (TensorParallelStage<CpuTensor> stage : stages) {
                        StageOutput<CpuTensor> next = stage.forward(in);
                        if (out != null) {
                            stage.ops().release(out.tensor());
                        }
                        out = next;
                        in = new StageInput.Hidden<>(segments, next.tensor());
                    }
                    float[] logits = new float[model.config().vocabSize()];
                    stages.get(0).ops().toHost(out.tensor(), logits);
                    stages.get(0).ops().release(out.tensor());
                    assertArrayEquals(p.lastLogitsF32(), logits, 1e-4f, "last logits at T=" + degree + ", " + stageCount + " stage(s)");
                    stages.forEach(s -> assertTrue(s.endRequest(1)));
                }
            } finally {
                stages.forEach(TensorParallelStage::close);
            }
        }
    }

    @ParameterizedTest(name = "T={0}, {1} stage(s)")
    @CsvSource({"1,1", "1,2", "2,1", "2,2"})
    void pipelinedTensorParallelGivesTheReferenceGreedyTokens(int degree, int stageCount) throws Exception {
        try (InferencePipeline model = InferencePipeline.builder().model(Fixture.dir("")).stages(stageCount).tensorParallel(degree)
                .actorSystem(TESTKIT.system()).build()) {
            List<GenerationRequest> requests = new ArrayList<>();
            for (Fixture.Prompt p : Fixture.prompts()) {
                requests.add(GenerationRequest.greedy(list(p.ids()), 16));
            }
            List<GenerationResult> results = model.generateAll(requests, Duration.ofSeconds(60));
            for (int i = 0; i < requests.size(); i++) {
                assertEquals(list(Fixture.prompts().get(i).greedy16()), results.get(i).generatedIds(), "prompt " + i);
            }
        }
    }

    @Test
    void degreesThatSplitAHeadAreRefusedNamingTheField() {
        GraphlaneException kv = assertThrows(GraphlaneException.class,
                () -> InferencePipeline.builder().model(Fixture.dir("")).tensorParallel(4).build());
        assertTrue(kv.getMessage().contains("num_key_value_heads = 2"), kv.getMessage());
        GraphlaneException heads = assertThrows(GraphlaneException.class,
                () -> InferencePipeline.builder().model(Fixture.dir("")).tensorParallel(3).build());
        assertTrue(heads.getMessage().contains("num_attention_heads = 4"), heads.getMessage());
    }

    private static List<Integer> list(int[] a) {
        List<Integer> l = new ArrayList<>();
        for (int v : a) {
            l.add(v);
        }
        return l;
    }
}
