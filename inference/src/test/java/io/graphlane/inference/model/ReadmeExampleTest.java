package io.graphlane.inference.model;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import io.graphlane.backend.cpu.nn.CpuTensor;
import io.graphlane.inference.generate.SequentialGenerator;
import io.graphlane.inference.generate.SequentialRequest;
import io.graphlane.inference.generate.StagedModel;
import io.graphlane.inference.sampling.SamplingParams;
import io.graphlane.inference.tokenizer.TextTokenizer;
import io.graphlane.inference.weights.WeightFormat;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The README's "real Hugging Face model" snippet, compiled and run on the fixture directory. */
class ReadmeExampleTest {

    @Test
    void theReadmeSnippetGeneratesTheFixturesGreedyTokens() {
        Path dir = Fixture.dir("");
        Fixture.Prompt fox = Fixture.prompts().get(4);

        ModelDirectory model = ModelDirectory.open(dir);
        try (StagedModel<CpuTensor> staged = CpuModels.supervised(model, 2, WeightFormat.STORED);
             TextTokenizer tokenizer = model.tokenizer()) {
            int[] prompt = tokenizer.encode("The quick brown fox");
            int[] tokens = SequentialGenerator.generate(staged,
                    List.of(new SequentialRequest(prompt, 16, SamplingParams.GREEDY, model.eosTokenIds()))).get(0);
            assertArrayEquals(fox.ids(), prompt);
            assertArrayEquals(fox.greedy16(), tokens);
        }
    }
}
