package io.graphlane.server;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.graphlane.inference.sampling.GenerationDefaults;
import io.graphlane.inference.sampling.SamplingParams;
import java.util.OptionalDouble;
import java.util.OptionalInt;
import org.junit.jupiter.api.Test;

/** A model's generation_config.json defaults fill exactly the sampling fields a request leaves out (or sends as null). */
class GenerationDefaultsOptionsTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final GenerationDefaults DEFAULTS = new GenerationDefaults(OptionalDouble.of(0.6), OptionalDouble.of(0.9),
            OptionalInt.of(20), OptionalDouble.of(0.05), OptionalDouble.of(1.1));

    private static SamplingParams parse(String body, GenerationDefaults defaults) throws Exception {
        return GenerationOptions.parse(JSON.readTree(body), GenerationOptions.LogprobsStyle.CHAT, false, defaults).sampling();
    }

    @Test
    void aRequestThatLeavesEveryFieldOutGetsTheModelsDefaults() throws Exception {
        SamplingParams p = parse("{}", DEFAULTS);
        assertEquals(0.6, p.temperature());
        assertEquals(0.9, p.topP());
        assertEquals(20, p.topK());
        assertEquals(0.05, p.minP());
        assertEquals(1.1, p.repetitionPenalty());
    }

    @Test
    void aFieldTheRequestGivesWinsAndNullCountsAsLeftOut() throws Exception {
        SamplingParams p = parse("{\"temperature\": 0, \"top_p\": 1, \"top_k\": -1, \"min_p\": null, \"repetition_penalty\": 1}", DEFAULTS);
        assertEquals(0.0, p.temperature());
        assertEquals(1.0, p.topP());
        assertEquals(-1, p.topK());
        assertEquals(0.05, p.minP(), "null takes the default");
        assertEquals(1.0, p.repetitionPenalty());
    }

    @Test
    void withoutModelDefaultsTheApiDefaultsApply() throws Exception {
        SamplingParams p = parse("{}", GenerationDefaults.NONE);
        assertEquals(1.0, p.temperature());
        assertEquals(1.0, p.topP());
        assertEquals(-1, p.topK());
        assertEquals(0.0, p.minP());
        assertEquals(1.0, p.repetitionPenalty());
    }

    @Test
    void aPartialFileFillsOnlyWhatItSets() throws Exception {
        GenerationDefaults onlyTopK = new GenerationDefaults(OptionalDouble.empty(), OptionalDouble.empty(), OptionalInt.of(5),
                OptionalDouble.empty(), OptionalDouble.empty());
        SamplingParams p = parse("{\"top_p\": 0.5}", onlyTopK);
        assertEquals(1.0, p.temperature());
        assertEquals(0.5, p.topP());
        assertEquals(5, p.topK());
    }
}
