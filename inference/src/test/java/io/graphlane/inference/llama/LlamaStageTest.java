package io.graphlane.inference.llama;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.backend.cpu.nn.CpuNeuralOps;
import io.graphlane.backend.cpu.nn.CpuTensor;
import io.graphlane.core.GraphlaneException;
import io.graphlane.core.nn.NeuralOps;
import io.graphlane.inference.demo.SeededWeights;
import io.graphlane.inference.generate.SequentialGenerator;
import io.graphlane.inference.generate.SequentialRequest;
import io.graphlane.inference.generate.StagedModel;
import io.graphlane.inference.sampling.SamplingParams;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The stage forward pass on small random models against a double-precision reference, across splits, batches and cache use. */
class LlamaStageTest {
    private static final int[] PROMPT = {3, 17, 42, 8, 8, 0, 49, 21, 5};

    @Test
    void untiedGqaModelMatchesTheReferenceAtEveryPosition() {
        checkAgainstReference(TestModels.small(false, false), 11L);
    }

    @Test
    void tiedModelWithAttentionBiasesMatchesTheReference() {
        checkAgainstReference(TestModels.small(true, true), 12L);
    }

    /**
     * Per-layer windows (layer 0 sees 2 positions, layer 1 all, layer 2 three, layer 3 one) through 1, 2 and 4 stages,
     * so each stage must place its layers in the model's list: decode steps past every window against the reference.
     */
    @Test
    void perLayerSlidingWindowsMatchTheReferenceForEverySplit() {
        LlamaConfig config = TestModels.small(false, true).withAttentionWindows(List.of(2, NeuralOps.NO_WINDOW, 3, 1));
        Map<String, float[]> tensors = SeededWeights.generate(config, 13);
        double[][] expected = new ReferenceLlama(config, tensors).logits(PROMPT);
        double[][] full = new ReferenceLlama(config.withAttentionWindows(Collections.nCopies(4, NeuralOps.NO_WINDOW)), tensors)
                .logits(PROMPT);
        assertTrue(Math.abs(expected[PROMPT.length - 1][0] - full[PROMPT.length - 1][0]) > 1e-2, "the windows change the logits");
        for (int stages : new int[] {1, 2, 4}) {
            try (StagedModel<CpuTensor> model = TestModels.staged(config, tensors, stages)) {
                float[][] prefill = model.step(List.of(new Segment(1, 0, 4)), java.util.Arrays.copyOf(PROMPT, 4));
                assertClose(expected[3], prefill[0], stages + " stage(s), prefill");
                for (int p = 4; p < PROMPT.length; p++) {
                    float[] found = model.step(List.of(new Segment(1, p, 1)), new int[] {PROMPT[p]})[0];
                    assertClose(expected[p], found, stages + " stage(s), position " + p);
                }
            }
        }
    }

    @Test
    void everyStageSplitGivesBitIdenticalLogits() {
        LlamaConfig config = TestModels.small(false, true);
        Map<String, float[]> tensors = SeededWeights.generate(config, 5);
        float[] single = prefillLogits(config, tensors, 1, PROMPT);
        for (int stages = 2; stages <= 4; stages++) {
            assertArrayEquals(single, prefillLogits(config, tensors, stages, PROMPT), 0f, stages + " stages");
        }
    }

    @Test
    void aWarmedDecodeStepAllocatesOnlyTheTensorEachStageHandsOn() {
        LlamaConfig config = TestModels.small(false, true);
        Map<String, float[]> tensors = SeededWeights.generate(config, 9);
        for (int stageCount = 1; stageCount <= 3; stageCount += 2) {
            try (StagedModel<CpuTensor> model = TestModels.staged(config, tensors, stageCount)) {
                CpuNeuralOps ops = (CpuNeuralOps) model.stages().get(0).ops();
                model.step(List.of(new Segment(1, 0, 4), new Segment(2, 0, 3)), new int[] {3, 17, 42, 8, 8, 0, 49});
                for (int i = 0; i < 8; i++) {
                    long before = ops.allocationCount();
                    model.step(List.of(new Segment(1, 4 + i, 1), new Segment(2, 3 + i, 1)), new int[] {i, 2 * i});
                    // each stage hands on one tensor (the activation, or the logits on the last), freed by the model
                    assertEquals(stageCount, ops.allocationCount() - before, stageCount + " stage(s), decode step " + i);
                }
            }
        }
    }

    @Test
    void decodingStepByStepEqualsRecomputingThePrefix() {
        LlamaConfig config = TestModels.small(false, false);
        Map<String, float[]> tensors = SeededWeights.generate(config, 6);
        try (StagedModel<CpuTensor> model = TestModels.staged(config, tensors, 2)) {
            model.step(List.of(new Segment(1, 0, 3)), new int[] {PROMPT[0], PROMPT[1], PROMPT[2]});
            for (int p = 3; p < PROMPT.length; p++) {
                float[] incremental = model.step(List.of(new Segment(1, p, 1)), new int[] {PROMPT[p]})[0];
                float[] recomputed = model.step(List.of(new Segment(100 + p, 0, p + 1)), java.util.Arrays.copyOf(PROMPT, p + 1))[0];
                model.endRequest(100 + p);
                assertArrayEquals(recomputed, incremental, 1e-4f, "position " + p);
            }
            assertEquals(PROMPT.length, model.stages().get(0).cachedPositions(1));
        }
    }

    @Test
    void aMicroBatchOfRequestsEqualsRunningThemAlone() {
        LlamaConfig config = TestModels.small(false, false);
        Map<String, float[]> tensors = SeededWeights.generate(config, 7);
        int[] a = {1, 2, 3, 4};
        int[] b = {9, 8};
        float[] aloneA = prefillLogits(config, tensors, 2, a);
        float[] aloneB = prefillLogits(config, tensors, 2, b);
        try (StagedModel<CpuTensor> model = TestModels.staged(config, tensors, 2)) {
            float[][] batched = model.step(List.of(new Segment(1, 0, a.length), new Segment(2, 0, b.length)), new int[] {1, 2, 3, 4, 9, 8});
            assertArrayEquals(aloneA, batched[0], 1e-4f);
            assertArrayEquals(aloneB, batched[1], 1e-4f);
        }
    }

    @Test
    void greedyGenerationIsTheSameForEverySplitAndBatch() {
        LlamaConfig config = TestModels.small(true, false);
        Map<String, float[]> tensors = SeededWeights.generate(config, 8);
        List<SequentialRequest> requests = List.of(
                new SequentialRequest(PROMPT, 12, SamplingParams.GREEDY),
                new SequentialRequest(new int[] {7}, 12, SamplingParams.GREEDY),
                new SequentialRequest(new int[] {4, 4, 4}, 12, new SamplingParams(0.8, 0.9, 99)));
        List<int[]> reference;
        try (StagedModel<CpuTensor> model = TestModels.staged(config, tensors, 1)) {
            reference = SequentialGenerator.generate(model, requests);
        }
        for (int stages = 2; stages <= 4; stages++) {
            try (StagedModel<CpuTensor> model = TestModels.staged(config, tensors, stages)) {
                List<int[]> tokens = SequentialGenerator.generate(model, requests);
                for (int r = 0; r < requests.size(); r++) {
                    assertArrayEquals(reference.get(r), tokens.get(r), "request " + r + " with " + stages + " stages");
                }
                assertTrue(model.stages().stream().allMatch(s -> s.cachedRequests().isEmpty()), "caches freed after generation");
            }
        }
        try (StagedModel<CpuTensor> model = TestModels.staged(config, tensors, 2)) {
            assertArrayEquals(reference.get(1), SequentialGenerator.generate(model, List.of(requests.get(1))).get(0), "request 1 alone");
        }
    }

    @Test
    void aStopTokenEndsTheRequestAfterIt() {
        LlamaConfig config = TestModels.small(false, false);
        Map<String, float[]> tensors = SeededWeights.generate(config, 9);
        try (StagedModel<CpuTensor> model = TestModels.staged(config, tensors, 1)) {
            int[] free = SequentialGenerator.generate(model, List.of(new SequentialRequest(PROMPT, 6, SamplingParams.GREEDY))).get(0);
            int[] stopped = SequentialGenerator.generate(model,
                    List.of(new SequentialRequest(PROMPT, 6, SamplingParams.GREEDY, Set.of(free[2])))).get(0);
            int firstStop = 0;
            while (free[firstStop] != free[2]) {
                firstStop++;
            }
            assertArrayEquals(java.util.Arrays.copyOf(free, firstStop + 1), stopped);
        }
    }

    @Test
    void positionsOutOfOrderAreRefusedAndLeaveTheCacheAsItWas() {
        LlamaConfig config = TestModels.small(false, false);
        try (StagedModel<CpuTensor> model = TestModels.staged(config, SeededWeights.generate(config, 10), 2)) {
            model.step(List.of(new Segment(5, 0, 2)), new int[] {1, 2});
            GraphlaneException e = assertThrows(GraphlaneException.class, () -> model.step(List.of(new Segment(5, 3, 1)), new int[] {3}));
            assertTrue(e.getMessage().contains("expected position 2 next, got 3"), e.getMessage());
            GraphlaneException unknown = assertThrows(GraphlaneException.class, () -> model.step(List.of(new Segment(6, 4, 1)), new int[] {3}));
            assertTrue(unknown.getMessage().contains("request 6 is unknown"), unknown.getMessage());
            assertEquals(2, model.stages().get(0).cachedPositions(5));
            model.step(List.of(new Segment(5, 2, 1)), new int[] {3});
            assertEquals(3, model.stages().get(1).cachedPositions(5));
        }
    }

    @Test
    void aSequenceLongerThanTheModelAllowsIsRefused() {
        LlamaConfig base = TestModels.small(false, false);
        LlamaConfig config = new LlamaConfig(base.hiddenSize(), base.intermediateSize(), base.layerCount(), base.headCount(),
                base.kvHeadCount(), base.headDim(), base.vocabSize(), base.rmsNormEps(), base.ropeTheta(), false, false, false, 4);
        try (StagedModel<CpuTensor> model = TestModels.staged(config, SeededWeights.generate(config, 10), 1)) {
            GraphlaneException e = assertThrows(GraphlaneException.class, () -> model.step(List.of(new Segment(1, 0, 5)), new int[] {1, 2, 3, 4, 5}));
            assertTrue(e.getMessage().contains("5 positions exceed the model's maximum of 4"), e.getMessage());
        }
    }

    private static void checkAgainstReference(LlamaConfig config, long seed) {
        Map<String, float[]> tensors = SeededWeights.generate(config, seed);
        double[][] expected = new ReferenceLlama(config, tensors).logits(PROMPT);
        try (StagedModel<CpuTensor> model = TestModels.staged(config, tensors, 3)) {
            for (int p = 0; p < PROMPT.length; p++) {
                float[] found = model.step(List.of(new Segment(1, p, 1)), new int[] {PROMPT[p]})[0];
                for (int v = 0; v < config.vocabSize(); v++) {
                    assertEquals(expected[p][v], found[v], 2e-4, "position " + p + " token " + v);
                }
            }
        }
    }

    private static void assertClose(double[] expected, float[] found, String where) {
        for (int v = 0; v < expected.length; v++) {
            assertEquals(expected[v], found[v], 2e-4, where + ", token " + v);
        }
    }

    private static float[] prefillLogits(LlamaConfig config, Map<String, float[]> tensors, int stages, int[] prompt) {
        try (StagedModel<CpuTensor> model = TestModels.staged(config, tensors, stages)) {
            return model.step(List.of(new Segment(1, 0, prompt.length)), prompt)[0];
        }
    }
}
