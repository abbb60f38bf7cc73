package io.graphlane.inference.hf;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.backend.cpu.nn.CpuTensor;
import io.graphlane.checkpoint.gguf.GgmlType;
import io.graphlane.checkpoint.gguf.HfGguf;
import io.graphlane.inference.generate.SequentialGenerator;
import io.graphlane.inference.generate.SequentialRequest;
import io.graphlane.inference.generate.StagedModel;
import io.graphlane.inference.llama.Segment;
import io.graphlane.inference.model.CpuModels;
import io.graphlane.inference.model.ModelDirectory;
import io.graphlane.inference.sampling.SamplingParams;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * HF fixtures of other families written as F32 GGUF (qwen2's biases, qwen3's q/k head norms, llama's permuted q/k
 * biases) run from the file within the fixture's tolerance of its float64 reference, with its 8 greedy tokens, on 2 stages.
 */
class GgufHfFixturesTest {
    @TempDir
    static Path tmp;

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"qwen2", "qwen3", "attention-bias"})
    void f32FileMatchesTheReference(String name) {
        HfFixturesTest.Reference ref = HfFixturesTest.reference(name);
        Path file = HfGguf.write(ref.dir(), GgmlType.F32, tmp.resolve(name).resolve(name + ".gguf"));
        ModelDirectory dir = ModelDirectory.open(file);
        try (StagedModel<CpuTensor> model = CpuModels.staged(dir, 2)) {
            long id = 1;
            for (HfFixturesTest.Prompt p : ref.prompts()) {
                float[] last = model.step(List.of(new Segment(id, 0, p.ids().length)), p.ids())[0];
                model.endRequest(id++);
                double error = HfFixturesTest.relativeError(p.lastLogits(), last);
                assertTrue(error <= ref.toleranceRel(), name + ", " + p.ids().length + "-token prompt: last logits off by " + error);
                int[] greedy = SequentialGenerator.generate(model, List.of(new SequentialRequest(p.ids(), 8, SamplingParams.GREEDY))).get(0);
                assertArrayEquals(p.greedy8(), greedy, name + ", " + p.ids().length + "-token prompt: greedy tokens");
            }
        }
    }
}
