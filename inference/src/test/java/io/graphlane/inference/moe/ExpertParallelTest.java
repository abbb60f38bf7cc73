package io.graphlane.inference.moe;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.core.GraphlaneException;
import io.graphlane.inference.generate.SequentialGenerator;
import io.graphlane.inference.generate.SequentialRequest;
import io.graphlane.inference.hf.HfFixturesTest;
import io.graphlane.inference.llama.Segment;
import io.graphlane.inference.model.ModelDirectory;
import io.graphlane.inference.sampling.SamplingParams;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.Test;

/**
 * Expert parallelism in one process against the float64 references: the last-position logits within the tolerance and
 * the 8 greedy tokens at expert-parallel 1, 2 and 4 (on 1 and 2 stages); rows whose experts are all remote come back
 * intact; a failing expert rank fails the step naming it.
 */
class ExpertParallelTest {
    private static final Path ROOT = Path.of("src/test/resources/hf-fixtures");

    @ParameterizedTest(name = "{0}: {1} stage(s), expert-parallel {2}")
    @CsvSource({"mixtral, 1, 1", "mixtral, 1, 2", "mixtral, 1, 4", "mixtral, 2, 4", "qwen3-moe, 1, 2", "qwen3-moe, 2, 4"})
    void logitsAndGreedyTokensEqualTheReference(String name, int stages, int expertParallel) {
        HfFixturesTest.Reference ref = HfFixturesTest.reference(name);
        ExpertParallelModels.Parallel p = ExpertParallelModels.staged(ModelDirectory.open(ROOT.resolve(name)), stages, expertParallel);
        try (var model = p.model()) {
            long id = 10;
            for (HfFixturesTest.Prompt prompt : ref.prompts()) {
                float[] last = model.step(List.of(new Segment(id, 0, prompt.ids().length)), prompt.ids())[0];
                model.endRequest(id++);
                double worst = 0;
                double largest = 0;
                for (int i = 0; i < last.length; i++) {
                    worst = Math.max(worst, Math.abs(last[i] - prompt.lastLogits()[i]));
                    largest = Math.max(largest, Math.abs(prompt.lastLogits()[i]));
                }
                assertTrue(worst / largest <= ref.toleranceRel(), name + ", " + prompt.ids().length + "-token prompt, expert-parallel "
                        + expertParallel + ": last logits off by " + worst / largest);
                int[] greedy = SequentialGenerator.generate(model, List.of(new SequentialRequest(prompt.ids(), 8, SamplingParams.GREEDY))).get(0);
                assertArrayEquals(prompt.greedy8(), greedy, name + ", expert-parallel " + expertParallel + ": greedy tokens");
            }
            long moved = p.lanes().stream().mapToLong(ExpertParallelExperts::bytesMoved).sum();
            assertEquals(expertParallel == 1, moved == 0, "rows cross ranks exactly when there are several: " + moved + " bytes");
            assertTrue(p.lanes().stream().allMatch(l -> l.steps() > 0), "every stage's sparse layers ran through the lanes");
        }
    }

    @Test
    void aFailingExpertRankFailsTheStepNamingIt() {
        ExpertParallelModels.Parallel p = ExpertParallelModels.staged(ModelDirectory.open(ROOT.resolve("mixtral")), 1, 4);
        try (var model = p.model()) {
            int[] prompt = HfFixturesTest.reference("mixtral").prompts().get(2).ids();
            p.lanes().get(0).failRank(3);
            GraphlaneException e = assertThrows(GraphlaneException.class,
                    () -> model.step(List.of(new Segment(1, 0, prompt.length)), prompt));
            assertTrue(e.getMessage().contains("expert rank 3 (experts 6..7)") && e.getMessage().contains("requests affected: [1]"),
                    e.getMessage());
            model.endRequest(1);
            // the lanes recover: the next step without the fault matches the reference
            p.lanes().get(0).failRank(-1);
            HfFixturesTest.Prompt ref = HfFixturesTest.reference("mixtral").prompts().get(2);
            float[] last = model.step(List.of(new Segment(2, 0, prompt.length)), prompt)[0];
            assertEquals(ref.lastLogits()[0], last[0], 1e-3);
        }
    }

    /** Runs {@code routing} over {@code rows} random rows through {@code runner}; returns the combined sum. */
    private static float[] combine(io.graphlane.inference.llama.MoeBlock.ExpertRunner<io.graphlane.backend.cpu.nn.CpuTensor> runner,
                                   io.graphlane.inference.llama.MoeWeights<io.graphlane.backend.cpu.nn.CpuTensor> weights, float[] normed,
                                   io.graphlane.inference.llama.MoeRouting routing, int hidden) {
        float[] out = new float[routing.rows() * hidden];
        runner.run(weights, normed, routing, out);
        return out;
    }

    @Test
    void rowsWhoseExpertsAreAllRemoteComeBackIntactAndExpertZeroAloneSendsNothing() {
        io.graphlane.inference.llama.LlamaConfig base = io.graphlane.inference.llama.TestModels.small(false, false);
        io.graphlane.inference.llama.LlamaConfig config = base.withMoe(new io.graphlane.checkpoint.config.MoeConfig(4, 2,
                base.intermediateSize(), true, java.util.Collections.nCopies(base.layerCount(), true), true));
        io.graphlane.backend.cpu.nn.CpuNeuralOps ops = new io.graphlane.backend.cpu.nn.CpuNeuralOps();
        java.util.Random r = new java.util.Random(7);
        int h = config.hiddenSize();
        int w = config.intermediateSize();
        List<io.graphlane.inference.llama.ExpertWeights<io.graphlane.backend.cpu.nn.CpuTensor>> experts = new java.util.ArrayList<>();
        for (int e = 0; e < 4; e++) {
            experts.add(new io.graphlane.inference.llama.ExpertWeights<>(ops.fromHost(gaussian(r, w * h), w, h),
                    ops.fromHost(gaussian(r, w * h), w, h), ops.fromHost(gaussian(r, h * w), h, w)));
        }
        var weights = new io.graphlane.inference.llama.MoeWeights<>(0, ops.fromHost(new float[4 * h], 4, h), experts);
        int rows = 5;
        float[] normed = gaussian(r, rows * h);
        // every row chooses experts 2 and 3, which rank 1 of 2 owns: all remote from rank 0
        int[] remote = new int[rows * 2];
        float[] half = new float[rows * 2];
        for (int i = 0; i < rows; i++) {
            remote[2 * i] = 3;
            remote[2 * i + 1] = 2;
            half[2 * i] = 0.75f;
            half[2 * i + 1] = 0.25f;
        }
        var routing = new io.graphlane.inference.llama.MoeRouting(rows, 2, remote, half);
        float[] expected = new float[rows * h];
        localRunner(ops, config).run(weights, normed, routing, expected);
        try (ExpertParallelExperts two = new ExpertParallelExperts(config, 2)) {
            assertArrayEquals(expected, combine(two, weights, normed, routing, h), 1e-6f, "remote rows come back intact");
            assertEquals(2L * rows * 2 * h * Float.BYTES, two.bytesMoved(), "both chosen rows of each row crossed, there and back");
            // a router that always picks expert 0 (top-1): nothing leaves rank 0
            int[] zero = new int[rows];
            float[] one = new float[rows];
            java.util.Arrays.fill(one, 1f);
            var onlyZero = new io.graphlane.inference.llama.MoeRouting(rows, 1, zero, one);
            float[] expectedZero = new float[rows * h];
            localRunner(ops, config).run(weights, normed, onlyZero, expectedZero);
            long before = two.bytesMoved();
            assertArrayEquals(expectedZero, combine(two, weights, normed, onlyZero, h), 1e-6f);
            assertEquals(before, two.bytesMoved(), "expert 0 alone sends nothing to the other ranks");
        }
    }

    private static io.graphlane.inference.llama.MoeBlock.ExpertRunner<io.graphlane.backend.cpu.nn.CpuTensor> localRunner(
            io.graphlane.backend.cpu.nn.CpuNeuralOps ops, io.graphlane.inference.llama.LlamaConfig config) {
        // the in-process runner MoeBlock.local uses, reached through a block: one expert at a time on this thread
        return (weights, normed, routing, out) -> {
            int h = config.hiddenSize();
            int[] slots = new int[routing.experts().length];
            for (int e = 0; e < weights.expertCount(); e++) {
                int[] ids = routing.rowsOf(e, slots);
                if (ids.length == 0) {
                    continue;
                }
                float[] wts = new float[ids.length];
                for (int i = 0; i < ids.length; i++) {
                    wts[i] = routing.weights()[slots[i]];
                }
                float[] y = io.graphlane.inference.llama.MoeBlock.runExpert(ops, config, weights.experts().get(e),
                        io.graphlane.inference.llama.MoeBlock.gather(normed, ids, h), ids.length);
                io.graphlane.inference.llama.MoeBlock.accumulate(out, y, ids, wts, h);
            }
        };
    }

    private static float[] gaussian(java.util.Random r, int n) {
        float[] a = new float[n];
        for (int i = 0; i < n; i++) {
            a[i] = (float) (r.nextGaussian() * 0.2);
        }
        return a;
    }

    @Test
    void sizesThatDoNotSplitTheExpertsAndTensorParallelismAreRefusedNamingTheOption() {
        io.graphlane.inference.llama.LlamaConfig config = ModelDirectory.open(ROOT.resolve("mixtral")).config();
        GraphlaneException three = assertThrows(GraphlaneException.class, () -> new ExpertParallelExperts(config, 3));
        assertTrue(three.getMessage().contains("--expert-parallel 3 must be >= 1 and divide the 8 experts"), three.getMessage());
        GraphlaneException dense = assertThrows(GraphlaneException.class,
                () -> new ExpertParallelExperts(io.graphlane.inference.llama.TestModels.small(false, false), 2));
        assertTrue(dense.getMessage().contains("has no mixture of experts"), dense.getMessage());
        GraphlaneException tp = assertThrows(GraphlaneException.class,
                () -> new io.graphlane.inference.tensorparallel.TensorParallelism(config, 2));
        assertTrue(tp.getMessage().contains("--tensor-parallel 2: a mixture-of-experts model"), tp.getMessage());
    }

    @Test
    void aFailingExpertRankFailsOnlyTheRequestsRoutedToItAndTheOthersMatchAFaultFreeRun() {
        HfFixturesTest.Reference ref = HfFixturesTest.reference("mixtral");
        List<HfFixturesTest.Prompt> prompts = ref.prompts();
        List<Segment> prefill = new java.util.ArrayList<>();
        int total = prompts.stream().mapToInt(q -> q.ids().length).sum();
        int[] all = new int[total];
        int at = 0;
        for (int i = 0; i < prompts.size(); i++) {
            int[] ids = prompts.get(i).ids();
            prefill.add(new Segment(100 + i, 0, ids.length));
            System.arraycopy(ids, 0, all, at, ids.length);
            at += ids.length;
        }
        // one decode step: each request's first greedy token at its next position
        List<Segment> decode = new java.util.ArrayList<>();
        int[] next = new int[prompts.size()];
        for (int i = 0; i < prompts.size(); i++) {
            decode.add(new Segment(100 + i, prompts.get(i).ids().length, 1));
            next[i] = prompts.get(i).greedy8()[0];
        }
        float[][] faultFree;
        ExpertParallelModels.Parallel clean = ExpertParallelModels.staged(ModelDirectory.open(ROOT.resolve("mixtral")), 2, 4);
        try (var model = clean.model()) {
            model.step(prefill, all);
            faultFree = model.step(decode, next);
        }
        boolean split = false;
        for (int rank = 0; rank < 4; rank++) {
            ExpertParallelModels.Parallel p = ExpertParallelModels.staged(ModelDirectory.open(ROOT.resolve("mixtral")), 2, 4);
            try (var model = p.model()) {
                model.step(prefill, all);
                for (ExpertParallelExperts lanes : p.lanes()) {
                    lanes.failRank(rank);
                }
                ExpertFaultIsolation.Outcome outcome = ExpertFaultIsolation.step(model, decode, next);
                assertEquals(prompts.size(), outcome.logits().size() + outcome.failed().size(), "every request completes or fails");
                for (var f : outcome.failed().entrySet()) {
                    assertEquals(rank, f.getValue().rank());
                    assertTrue(f.getValue().getMessage().contains("expert rank " + rank), f.getValue().getMessage());
                    assertTrue(model.stages().stream().noneMatch(s -> s.cachedRequests().contains(f.getKey())),
                            "a failed request's caches are freed");
                }
                for (var ok : outcome.logits().entrySet()) {
                    float[] expected = faultFree[(int) (ok.getKey() - 100)];
                    double worst = 0;
                    double largest = 0;
                    for (int i = 0; i < expected.length; i++) {
                        worst = Math.max(worst, Math.abs(expected[i] - ok.getValue()[i]));
                        largest = Math.max(largest, Math.abs(expected[i]));
                    }
                    assertTrue(worst / largest <= 1e-5, "rank " + rank + " failed; survivor " + ok.getKey() + " off by " + worst / largest);
                    assertTrue(model.stages().stream().allMatch(s -> s.cachedPositions(ok.getKey())
                            == prompts.get((int) (ok.getKey() - 100)).ids().length + 1), "a survivor's caches hold the step once");
                }
                split |= !outcome.failed().isEmpty() && !outcome.logits().isEmpty();
            }
        }
        assertTrue(split, "some rank's failure hits some requests and spares others (else the law is not exercised)");
    }

    @ParameterizedTest(name = "{0}: actor pipeline, {1} stage(s), expert-parallel {2}")
    @CsvSource({"mixtral, 2, 2", "qwen3-moe, 1, 4"})
    void theActorPipelineWithExpertLanesGivesTheReferenceGreedyTokens(String name, int stages, int expertParallel) throws Exception {
        HfFixturesTest.Reference ref = HfFixturesTest.reference(name);
        org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit kit = org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit.create();
        try (io.graphlane.inference.pipeline.InferencePipeline model = io.graphlane.inference.pipeline.InferencePipeline.builder()
                .model(ROOT.resolve(name)).stages(stages).expertParallel(expertParallel).actorSystem(kit.system()).build()) {
            List<io.graphlane.inference.api.GenerationRequest> requests = new java.util.ArrayList<>();
            for (HfFixturesTest.Prompt p : ref.prompts()) {
                requests.add(io.graphlane.inference.api.GenerationRequest.greedy(java.util.Arrays.stream(p.ids()).boxed().toList(), 8));
            }
            var results = model.generateAll(requests, java.time.Duration.ofSeconds(120));
            for (int i = 0; i < requests.size(); i++) {
                assertEquals(java.util.Arrays.stream(ref.prompts().get(i).greedy8()).boxed().toList(), results.get(i).generatedIds(),
                        name + ", prompt " + i + ", every prompt in flight, expert-parallel " + expertParallel);
            }
        } finally {
            kit.shutdownTestKit();
        }
        GraphlaneException refused = assertThrows(GraphlaneException.class, () -> io.graphlane.inference.pipeline.InferencePipeline.builder()
                .model(ROOT.resolve(name)).expertParallel(3).build());
        assertTrue(refused.getMessage().contains("--expert-parallel 3 must be >= 1 and divide the 8 experts"), refused.getMessage());
    }

    @Test
    void aRankLostMidAllToAllFailsTheStepNamingItAndLaterStepsFailAtOnce() {
        ExpertParallelModels.Parallel p = ExpertParallelModels.staged(ModelDirectory.open(ROOT.resolve("mixtral")), 1, 4);
        try (var model = p.model()) {
            int[] prompt = HfFixturesTest.reference("mixtral").prompts().get(1).ids();
            p.lanes().get(0).loseRank(2);
            GraphlaneException lost = assertThrows(GraphlaneException.class,
                    () -> model.step(List.of(new Segment(1, 0, prompt.length)), prompt));
            assertTrue(lost.getMessage().contains("member 2 left the group") && lost.getMessage().contains("expert rank 2 was lost"),
                    lost.getMessage());
            model.endRequest(1);
            GraphlaneException after = assertThrows(GraphlaneException.class,
                    () -> model.step(List.of(new Segment(2, 0, prompt.length)), prompt));
            assertTrue(after.getMessage().contains("the expert lanes cannot run") && after.getMessage().contains("member 2 left"),
                    after.getMessage());
            model.endRequest(2);
        }
    }
}
