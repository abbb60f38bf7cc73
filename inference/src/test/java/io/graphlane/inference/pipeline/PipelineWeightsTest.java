package io.graphlane.inference.pipeline;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.actors.materialize.UnitReply;
import io.graphlane.backend.cpu.nn.CpuTensor;
import io.graphlane.core.GraphlaneException;
import io.graphlane.inference.api.GenerationRequest;
import io.graphlane.inference.api.GenerationResult;
import io.graphlane.inference.generate.SequentialGenerator;
import io.graphlane.inference.generate.SequentialRequest;
import io.graphlane.inference.generate.StagedModel;
import io.graphlane.inference.llama.LlamaTensors;
import io.graphlane.inference.model.CpuModels;
import io.graphlane.inference.model.Fixture;
import io.graphlane.inference.model.ModelDirectory;
import io.graphlane.inference.sampling.SamplingParams;
import io.graphlane.inference.weights.CorruptCheckpoints;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The pipeline's stages loaded through the materialization supervisor: right answers, clear refusals, clean failures. */
class PipelineWeightsTest {
    private static final ActorTestKit TESTKIT = ActorTestKit.create();

    @AfterAll
    static void shutdown() {
        TESTKIT.shutdownTestKit();
    }

    private static List<Integer> list(int[] a) {
        return Arrays.stream(a).boxed().toList();
    }

    @Test
    void bf16WeightsWidenedByTheSupervisorGiveTheSequentialRunsTokensAtThreeStages() throws Exception {
        List<Fixture.Prompt> prompts = Fixture.prompts();
        List<int[]> sequential = new ArrayList<>();
        // The reference: one stage run on the calling thread, loaded by the checkpoint module's cast.
        try (StagedModel<CpuTensor> reference = CpuModels.staged(ModelDirectory.open(Fixture.dir("bf16")), 1)) {
            for (Fixture.Prompt p : prompts) {
                sequential.add(SequentialGenerator.generate(reference,
                        List.of(new SequentialRequest(p.ids(), 16, SamplingParams.GREEDY))).get(0));
            }
        }
        try (InferencePipeline model = InferencePipeline.builder().model(Fixture.dir("bf16")).stages(3)
                .actorSystem(TESTKIT.system()).build()) {
            List<GenerationRequest> requests = new ArrayList<>();
            for (Fixture.Prompt p : prompts) {
                requests.add(GenerationRequest.greedy(list(p.ids()), 16));
            }
            List<GenerationResult> results = model.generateAll(requests, Duration.ofSeconds(60));
            for (int i = 0; i < prompts.size(); i++) {
                assertArrayEquals(sequential.get(i), results.get(i).generatedIds().stream().mapToInt(Integer::intValue).toArray(),
                        "prompt " + i);
            }
        }
    }

    @Test
    void aCheckpointMissingATensorFailsTheBuildWithOneErrorNamingIt(@TempDir Path dir) {
        String missing = LlamaTensors.layer(3, "mlp.down_proj.weight");
        Path broken = CorruptCheckpoints.without(Fixture.dir(""), dir, missing);
        GraphlaneException e = assertThrows(GraphlaneException.class,
                () -> InferencePipeline.builder().model(broken).stages(2).actorSystem(TESTKIT.system()).build());
        assertTrue(e.getMessage().contains(missing), e.getMessage());
        assertFalse(e.getMessage().contains("\n"), "one line: " + e.getMessage());
    }

    @Test
    void aWrongShapeFailsTheBuildNamingTheTensorAndBothShapes(@TempDir Path dir) {
        String gate = LlamaTensors.layer(0, "mlp.gate_proj.weight");
        Path brokenGate = CorruptCheckpoints.transposed(Fixture.dir(""), dir, gate);
        GraphlaneException e = assertThrows(GraphlaneException.class,
                () -> InferencePipeline.builder().model(brokenGate).stages(1).actorSystem(TESTKIT.system()).build());
        assertTrue(e.getMessage().contains(gate) && e.getMessage().contains("[172, 64]") && e.getMessage().contains("[64, 172]"),
                e.getMessage());
    }

    @Test
    void aStageNotLoadedInTimeFailsTheBuildCleanlyClosesItsLateWeightsOnceAndTheNextBuildWorks() throws Exception {
        // The supervisor's answer is held by a probe, so the build's wait ends first whatever the machine's speed.
        TestProbe<UnitReply> answers = TESTKIT.createTestProbe();
        HeldAnswerCpuInference held = new HeldAnswerCpuInference(answers.ref());
        GraphlaneException e = assertThrows(GraphlaneException.class, () -> InferencePipeline.builder().model(Fixture.dir(""))
                .stages(2).loadTimeout(Duration.ofMillis(50)).backend(() -> held).actorSystem(TESTKIT.system()).build());
        assertTrue(e.getMessage().contains("stage 0/2") && e.getMessage().contains("was not loaded within"), e.getMessage());
        assertFalse(e.getMessage().contains("\n"), "one line: " + e.getMessage());

        // The supervisor still answers (bound, or failed because the failed build stopped it); handed on late, the
        // answer's weights are closed then, each exactly once.
        UnitReply late = answers.receiveMessage(Duration.ofSeconds(30));
        assertTrue(held.closeCounts().stream().allMatch(n -> n == 0), "nothing closed before the answer: " + held.closeCounts());
        held.release(0, late);
        held.everySlotClosed().get(30, TimeUnit.SECONDS);
        assertFalse(held.closeCounts().isEmpty());
        assertTrue(held.closeCounts().stream().allMatch(n -> n == 1), "each slot closed once: " + held.closeCounts());
        answers.expectNoMessage(Duration.ofMillis(100)); // stage 1 was never asked for

        Fixture.Prompt p = Fixture.prompts().get(0);
        try (InferencePipeline model = InferencePipeline.builder().model(Fixture.dir("")).stages(2)
                .actorSystem(TESTKIT.system()).build()) {
            assertEquals(list(p.greedy16()),
                    model.generateAll(List.of(GenerationRequest.greedy(list(p.ids()), 16)), Duration.ofSeconds(60)).get(0).generatedIds());
        }
    }
}
