package io.graphlane.inference.model;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import io.graphlane.inference.api.GenerationListener;
import io.graphlane.inference.api.GenerationRequest;
import io.graphlane.inference.api.GenerationResult;
import io.graphlane.inference.pipeline.InferencePipeline;
import io.graphlane.inference.weights.WeightFormat;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The inference README's "real Hugging Face model" snippet, compiled and run on the fixture directory. */
class ReadmeExampleTest {

    @Test
    void theReadmeSnippetGeneratesTheFixturesGreedyTokens() throws Exception {
        Path dir = Fixture.dir("");
        Fixture.Prompt fox = Fixture.prompts().get(4);
        int[] encoded;
        int[] generated;
        // --- README snippet begins (the model path, prompt and length are the fixture's) ---
        try (InferencePipeline model = InferencePipeline.builder()
                .model(dir)
                .stages(2)
                .weights(WeightFormat.STORED)
                .build()) {
            List<Integer> prompt = new ArrayList<>();
            for (int id : model.tokenizer().encode("The quick brown fox")) {
                prompt.add(id);
            }
            GenerationResult result = model.submit(GenerationRequest.greedy(prompt, 16), new GenerationListener() { })
                    .result().toCompletableFuture().get(60, TimeUnit.SECONDS);
            System.out.println(model.tokenizer().decode(result.generatedIds()));
        // --- README snippet ends ---
            encoded = model.tokenizer().encode("The quick brown fox");
            generated = result.generatedIds().stream().mapToInt(Integer::intValue).toArray();
        }
        assertArrayEquals(fox.ids(), encoded);
        assertArrayEquals(fox.greedy16(), generated);
    }
}
