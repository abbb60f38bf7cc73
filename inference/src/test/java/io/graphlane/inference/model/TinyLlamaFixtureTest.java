package io.graphlane.inference.model;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.backend.cpu.nn.CpuTensor;
import io.graphlane.inference.generate.SequentialGenerator;
import io.graphlane.inference.generate.SequentialRequest;
import io.graphlane.inference.generate.StagedModel;
import io.graphlane.inference.llama.Segment;
import io.graphlane.inference.sampling.SamplingParams;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The tiny-llama fixture against the PyTorch reference: last-position and first-position logits and
 * the 16 greedy tokens of every prompt, for 1 to 4 stages, F32, sharded and BF16 weights.
 */
class TinyLlamaFixtureTest {
    private static final float F32_TOLERANCE = 1e-4f;
    private static final float BF16_TOLERANCE = 2e-3f;

    @ParameterizedTest(name = "{0} stage(s)")
    @ValueSource(ints = {1, 2, 3, 4})
    void f32LogitsAndGreedyTokensMatchPyTorch(int stages) {
        checkF32(ModelDirectory.open(Fixture.dir("")), stages);
    }

    @ParameterizedTest(name = "{0} stage(s)")
    @ValueSource(ints = {1, 2, 3, 4})
    void shardedLayoutMatchesPyTorch(int stages) {
        checkF32(ModelDirectory.open(Fixture.dir("sharded")), stages);
    }

    @ParameterizedTest(name = "{0} stage(s)")
    @ValueSource(ints = {1, 2, 3, 4})
    void bf16WeightsMatchPyTorchWithinBf16Tolerance(int stages) {
        try (StagedModel<CpuTensor> model = CpuModels.staged(ModelDirectory.open(Fixture.dir("bf16")), stages)) {
            long id = 1;
            for (Fixture.Prompt prompt : Fixture.prompts()) {
                float[] last = model.step(List.of(new Segment(id, 0, prompt.ids().length)), prompt.ids())[0];
                model.endRequest(id++);
                assertClose(prompt.lastLogitsBf16(), last, BF16_TOLERANCE, "bf16 last logits of " + prompt.ids().length + "-token prompt");
            }
        }
    }

    @ParameterizedTest(name = "{0} stage(s)")
    @ValueSource(ints = {1, 4})
    void allPromptsInOneBatchGiveEachPromptsGreedyTokens(int stages) {
        List<Fixture.Prompt> prompts = Fixture.prompts();
        List<SequentialRequest> requests = new ArrayList<>();
        for (Fixture.Prompt prompt : prompts) {
            requests.add(new SequentialRequest(prompt.ids(), 16, SamplingParams.GREEDY));
        }
        try (StagedModel<CpuTensor> model = CpuModels.staged(ModelDirectory.open(Fixture.dir("")), stages)) {
            List<int[]> tokens = SequentialGenerator.generate(model, requests);
            for (int i = 0; i < prompts.size(); i++) {
                assertArrayEquals(prompts.get(i).greedy16(), tokens.get(i), "prompt " + i + " in a batch of " + prompts.size());
            }
        }
    }

    private static void checkF32(ModelDirectory dir, int stages) {
        assertEquals(4, dir.config().layerCount());
        try (StagedModel<CpuTensor> model = CpuModels.staged(dir, stages)) {
            long id = 1;
            for (Fixture.Prompt prompt : Fixture.prompts()) {
                String what = prompt.ids().length + "-token prompt, " + stages + " stage(s)";
                float[] last = model.step(List.of(new Segment(id, 0, prompt.ids().length)), prompt.ids())[0];
                model.endRequest(id++);
                assertClose(prompt.lastLogitsF32(), last, F32_TOLERANCE, "last logits of " + what);
                float[] first = model.step(List.of(new Segment(id, 0, 1)), new int[] {prompt.ids()[0]})[0];
                model.endRequest(id++);
                assertClose(prompt.firstLogitsF32(), first, F32_TOLERANCE, "first logits of " + what);
                int[] greedy = SequentialGenerator.generate(model, List.of(new SequentialRequest(prompt.ids(), 16, SamplingParams.GREEDY))).get(0);
                assertArrayEquals(prompt.greedy16(), greedy, "greedy tokens of " + what);
            }
            assertTrue(model.stages().stream().allMatch(s -> s.cachedRequests().isEmpty()));
        }
    }

    private static void assertClose(float[] expected, float[] found, float tolerance, String what) {
        assertEquals(expected.length, found.length, what + ": vocabulary size");
        float worst = 0;
        int at = -1;
        for (int i = 0; i < expected.length; i++) {
            float error = Math.abs(expected[i] - found[i]);
            if (error > worst) {
                worst = error;
                at = i;
            }
        }
        assertTrue(worst <= tolerance, what + ": token " + at + " is off by " + worst + " (expected " + (at < 0 ? 0 : expected[at])
                + ", found " + (at < 0 ? 0 : found[at]) + "), tolerance " + tolerance);
    }
}
