package io.graphlane.inference.llama;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.graphlane.backend.cpu.CpuBackend;
import io.graphlane.backend.cpu.CpuCompletion;
import io.graphlane.backend.cpu.CpuExecutor;
import io.graphlane.backend.cpu.nn.CpuNeuralBackend;
import io.graphlane.backend.cpu.nn.CpuTensor;
import io.graphlane.core.nn.NeuralOps;
import io.graphlane.inference.demo.SeededWeights;
import io.graphlane.inference.generate.SequentialGenerator;
import io.graphlane.inference.generate.SequentialRequest;
import io.graphlane.inference.generate.StagedModel;
import io.graphlane.inference.sampling.Sampler;
import io.graphlane.inference.sampling.SamplingParams;
import io.graphlane.inference.stage.StagePlan;
import io.graphlane.inference.stage.StageSpec;
import io.graphlane.inference.weights.StageWeightsAssembly;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * Each stage's forward as work on its own CPU lane, ordered after the previous stage's completion
 * with {@code orderAfter}, activations retained until their consumer completed, several requests
 * in different stages at once: the tokens equal the sequential run's.
 */
class StagesAsLaneWorkTest {

    @Test
    void stagesOnTheirOwnLanesGiveTheSequentialTokens() throws Exception {
        LlamaConfig config = TestModels.small(false, false);
        Map<String, float[]> tensors = SeededWeights.generate(config, 21);
        int[][] prompts = {{1, 2, 3}, {4}, {5, 6, 7, 8, 9}, {10, 11}};
        int steps = 6;
        List<SequentialRequest> requests = new ArrayList<>();
        for (int[] prompt : prompts) {
            requests.add(new SequentialRequest(prompt, steps, SamplingParams.GREEDY));
        }
        List<int[]> expected;
        try (StagedModel<CpuTensor> sequential = TestModels.staged(config, tensors, 1)) {
            expected = SequentialGenerator.generate(sequential, requests);
        }

        StagePlan plan = StagePlan.balanced(config.layerCount(), 3);
        CpuNeuralBackend neural = new CpuNeuralBackend();
        try (CpuBackend device = new CpuBackend()) {
            List<CpuExecutor> lanes = device.forkExecutors(device.rootExecutor(), plan.size());
            List<LlamaStage<CpuTensor>> stages = new ArrayList<>();
            for (StageSpec spec : plan.stages()) {
                NeuralOps<CpuTensor> ops = neural.ops(lanes.get(spec.index()));
                stages.add(new LlamaStage<>(config, StageWeightsAssembly.assemble(config, spec, ops,
                        e -> ops.fromHost(tensors.get(e.name()), e.rows(), e.cols())), ops));
            }
            List<List<Integer>> generated = new ArrayList<>();
            int[] next = new int[prompts.length];
            for (int r = 0; r < prompts.length; r++) {
                generated.add(new ArrayList<>());
            }
            for (int step = 0; step < steps; step++) {
                List<CpuCompletion> lastStage = new ArrayList<>();
                List<AtomicReference<float[]>> logits = new ArrayList<>();
                for (int r = 0; r < prompts.length; r++) {
                    Segment segment = step == 0 ? new Segment(r, 0, prompts[r].length) : new Segment(r, prompts[r].length + step - 1, 1);
                    int[] tokens = step == 0 ? prompts[r] : new int[] {next[r]};
                    AtomicReference<float[]> out = new AtomicReference<>();
                    lastStage.add(submitThroughStages(device, lanes, stages, segment, tokens, out));
                    logits.add(out);
                }
                for (int r = 0; r < prompts.length; r++) {
                    lastStage.get(r).awaitSuccess();
                    next[r] = Sampler.argmax(logits.get(r).get());
                    generated.get(r).add(next[r]);
                }
            }
            for (int r = 0; r < prompts.length; r++) {
                assertArrayEquals(expected.get(r), generated.get(r).stream().mapToInt(Integer::intValue).toArray(), "request " + r);
            }
            for (LlamaStage<CpuTensor> stage : stages) {
                assertEquals(prompts.length, stage.cachedRequests().size(), stage.spec() + " holds every request's cache");
            }
        }
    }

    /** Submits one step of one request on every stage's lane, each ordered after the previous; returns the last stage's completion. */
    private static CpuCompletion submitThroughStages(CpuBackend device, List<CpuExecutor> lanes, List<LlamaStage<CpuTensor>> stages,
                                                     Segment segment, int[] tokens, AtomicReference<float[]> logitsOut) {
        AtomicReference<CpuTensor> activation = new AtomicReference<>();
        CpuCompletion previous = null;
        for (int s = 0; s < stages.size(); s++) {
            LlamaStage<CpuTensor> stage = stages.get(s);
            CpuExecutor lane = lanes.get(s);
            AtomicReference<CpuTensor> input = activation;
            AtomicReference<CpuTensor> output = new AtomicReference<>();
            if (previous != null) {
                device.orderAfter(previous, lane);
            }
            CpuCompletion done = device.submit(lane, () -> {
                StageInput<CpuTensor> in = stage.spec().isFirst()
                        ? new StageInput.Tokens<>(List.of(segment), tokens)
                        : new StageInput.Hidden<>(List.of(segment), input.get());
                StageOutput<CpuTensor> result = stage.forward(in);
                if (result instanceof StageOutput.Logits<CpuTensor> logits) {
                    float[] host = new float[stage.config().vocabSize()];
                    stage.ops().toHost(logits.logits(), host);
                    stage.ops().release(logits.logits());
                    logitsOut.set(host);
                } else {
                    output.set(result.tensor());
                }
            });
            if (previous != null) {
                NeuralOps<CpuTensor> producerOps = stages.get(s - 1).ops();
                // the producer's activation stays alive until its consumer's exact completion
                device.retainUntilComplete(lane, done, (AutoCloseable) () -> producerOps.release(input.get()));
            }
            previous = done;
            activation = output;
        }
        return previous;
    }
}
