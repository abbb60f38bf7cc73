package io.graphlane.inference.example;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.graphlane.inference.api.FinishReason;
import io.graphlane.inference.api.GenerationListener;
import io.graphlane.inference.api.GenerationRequest;
import io.graphlane.inference.api.GenerationResult;
import io.graphlane.inference.model.Fixture;
import io.graphlane.inference.pipeline.InferencePipeline;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.junit.jupiter.api.Test;

/** The README's embedding example (pipeline-parallel inference in your own actor system), compiled and run as written. */
class ReadmeInferenceExampleTest {

    @Test
    void embedAPipelinedModelAndStreamTokens() throws Exception {
        Path modelDir = Fixture.dir("");
        List<Integer> streamed = new ArrayList<>();

        // --- README example begins ---
        ActorSystem<Void> system = ActorSystem.create(Behaviors.empty(), "my-service");
        try (InferencePipeline model = InferencePipeline.builder()
                .model(modelDir)              // a Hugging Face Llama / Mistral / Qwen2 directory
                .stages(2)                    // layers split into 2 pipeline stages, one lane each
                .actorSystem(system)          // optional: graphlane creates one otherwise
                .build()) {
            List<Integer> prompt = new ArrayList<>();
            for (int id : model.tokenizer().encode("The quick brown fox")) {
                prompt.add(id);
            }
            GenerationResult result = model.submit(GenerationRequest.greedy(prompt, 16), new GenerationListener() {
                @Override
                public void onToken(int tokenId) {
                    streamed.add(tokenId);    // tokens arrive in order, as they are generated
                }
            }).result().toCompletableFuture().get(60, TimeUnit.SECONDS);
            System.out.println(model.tokenizer().decode(result.generatedIds()));
            // --- README example ends ---

            assertEquals(result.generatedIds(), streamed);
            assertEquals(FinishReason.LENGTH, result.finishReason());
            // The fixture's last reference prompt is the bytes of "The quick brown fox".
            List<Fixture.Prompt> ref = Fixture.prompts();
            int[] expected = ref.get(ref.size() - 1).greedy16();
            for (int i = 0; i < expected.length; i++) {
                assertEquals(expected[i], (int) result.generatedIds().get(i));
            }
        } finally {
            system.terminate();
        }
    }
}
