package io.graphlane.checkpoint.config;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.graphlane.checkpoint.json.StrictJson;
import io.graphlane.core.nn.RotaryTable;
import java.nio.file.Path;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;

/**
 * The rotary tables of every RoPE variant, read from both transformers layouts, against values worked out by hand from
 * the formulas of transformers' {@code modeling_rope_utils.py}; and the refusals of the rope fields.
 */
class RopeConfigTest {
    private static final Path FILE = Path.of("m", "config.json");
    private static final double EPS = 1e-12;

    /** hidden 32, 4 heads: head_dim 8, so plain RoPE with theta 10000 has frequencies 1, 0.1, 0.01, 0.001. */
    private static ObjectNode config(Consumer<ObjectNode> change) {
        ObjectNode c = StrictJson.mapper().createObjectNode();
        c.putArray("architectures").add("LlamaForCausalLM");
        c.put("hidden_size", 32).put("intermediate_size", 64).put("num_hidden_layers", 2).put("num_attention_heads", 4)
                .put("num_key_value_heads", 2).put("vocab_size", 256).put("max_position_embeddings", 16)
                .put("rope_theta", 10000.0);
        change.accept(c);
        return c;
    }

    private static RopeConfig rope(ObjectNode c) {
        return ModelConfig.parse(FILE, c.toString()).rope();
    }

    private static void refused(ObjectNode c, String... fragments) {
        ModelConfigException e = assertThrows(ModelConfigException.class, () -> ModelConfig.parse(FILE, c.toString()));
        assertEquals(1, e.getMessage().lines().count(), e.getMessage());
        for (String f : fragments) {
            assertTrue(e.getMessage().contains(f), "expected '" + f + "' in: " + e.getMessage());
        }
    }

    @Test
    void defaultIsThetaToTheMinusTwoIOverD() {
        RotaryTable t = rope(config(c -> { })).table(8, 3);
        assertEquals(8, t.rotaryDim());
        assertArrayEquals(new double[] {1, 0.1, 0.01, 0.001}, t.inverseFrequencies(), EPS);
        assertEquals(1.0, t.attentionScaling());
        assertEquals(RotaryTable.standard(8, 10000), t);
    }

    @Test
    void linearDividesEveryFrequencyByTheFactor() {
        RotaryTable t = rope(config(c -> c.putObject("rope_scaling").put("rope_type", "linear").put("factor", 4.0))).table(8, 3);
        assertArrayEquals(new double[] {0.25, 0.025, 0.0025, 0.00025}, t.inverseFrequencies(), EPS);
    }

    @Test
    void dynamicIsExactUpToTheContextThenGrowsTheBaseWithTheSequence() {
        RopeConfig r = rope(config(c -> c.putObject("rope_scaling").put("type", "dynamic").put("factor", 2.0)));
        assertArrayEquals(new double[] {1, 0.1, 0.01, 0.001}, r.table(8, 16).inverseFrequencies(), EPS);
        // length 32 past a context of 16: base = 10000 * (2 * 32/16 - 1)^(8/6)
        double base = 10000 * Math.pow(3, 8.0 / 6);
        double[] expected = {1, Math.pow(base, -0.25), Math.pow(base, -0.5), Math.pow(base, -0.75)};
        assertArrayEquals(expected, r.table(8, 32).inverseFrequencies(), 1e-15);
        assertTrue(r.dependsOnLength());
        assertEquals(32, r.contextLength(), "dynamic runs factor x max_position_embeddings by default");
    }

    @Test
    void llama3KeepsHighFrequenciesDividesLowOnesAndSmoothsBetween() {
        // head_dim 16: frequencies 10000^(-i/8); wavelengths 2pi/f: 6.3 (high: kept), 19.9 (medium: smoothed), 62.8+ (low: / 8)
        ObjectNode c = config(o -> {
            o.put("num_attention_heads", 2).put("num_key_value_heads", 1);
            o.putObject("rope_scaling").put("rope_type", "llama3").put("factor", 8.0).put("low_freq_factor", 1.0)
                    .put("high_freq_factor", 4.0).put("original_max_position_embeddings", 32);
        });
        double[] inv = rope(c).table(16, 3).inverseFrequencies();
        assertEquals(1.0, inv[0], EPS);
        double f1 = Math.pow(10000, -1.0 / 8);
        double smooth = (32 / (2 * Math.PI / f1) - 1) / (4 - 1);
        assertEquals((1 - smooth) * f1 / 8 + smooth * f1, inv[1], EPS);
        for (int i = 2; i < 8; i++) {
            assertEquals(Math.pow(10000, -i / 8.0) / 8, inv[i], EPS, "frequency " + i);
        }
    }

    @Test
    void yarnRampsFromExtrapolationToInterpolationAndScalesCosAndSin() {
        // dims 8, base 10000, original 16: correction range [floor(-1.10), ceil(0.41)] = [0, 1]: pair 0 keeps its frequency,
        // the others are divided by the factor; attention factor 0.1 ln 4 + 1
        RotaryTable t = rope(config(c -> c.putObject("rope_scaling").put("rope_type", "yarn").put("factor", 4.0)
                .put("original_max_position_embeddings", 16))).table(8, 3);
        assertArrayEquals(new double[] {1, 0.1 / 4, 0.01 / 4, 0.001 / 4}, t.inverseFrequencies(), EPS);
        assertEquals(0.1 * Math.log(4) + 1, t.attentionScaling(), EPS);
    }

    @Test
    void longropeUsesShortFactorsUpToTheOriginalContextAndLongOnesPast() {
        ObjectNode c = config(o -> {
            o.put("max_position_embeddings", 64).put("original_max_position_embeddings", 16);
            ObjectNode s = o.putObject("rope_scaling").put("type", "longrope");
            s.putArray("short_factor").add(1.0).add(2.0).add(3.0).add(4.0);
            s.putArray("long_factor").add(5.0).add(6.0).add(7.0).add(8.0);
        });
        RopeConfig r = rope(c);
        assertArrayEquals(new double[] {1, 0.1 / 2, 0.01 / 3, 0.001 / 4}, r.table(8, 16).inverseFrequencies(), EPS);
        assertArrayEquals(new double[] {1.0 / 5, 0.1 / 6, 0.01 / 7, 0.001 / 8}, r.table(8, 17).inverseFrequencies(), EPS);
        double scaling = Math.sqrt(1 + Math.log(64.0 / 16) / Math.log(16));
        assertEquals(scaling, r.table(8, 3).attentionScaling(), EPS);
        assertEquals(scaling, r.table(8, 40).attentionScaling(), EPS);
    }

    @Test
    void partialRotaryFactorRotatesTheFirstShareOfEachHead() {
        RotaryTable t = rope(config(c -> c.put("num_attention_heads", 2).put("num_key_value_heads", 1)
                .put("partial_rotary_factor", 0.5))).table(16, 3);
        assertEquals(8, t.rotaryDim());
        assertArrayEquals(new double[] {1, 0.1, 0.01, 0.001}, t.inverseFrequencies(), EPS);
    }

    @Test
    void theTransformers5LayoutReadsTheSameAsThe4xLayout() {
        RopeConfig v4 = rope(config(c -> c.put("rope_theta", 500000.0).putObject("rope_scaling").put("rope_type", "llama3")
                .put("factor", 8.0).put("low_freq_factor", 1.0).put("high_freq_factor", 4.0)
                .put("original_max_position_embeddings", 8)));
        RopeConfig v5 = rope(config(c -> {
            c.remove("rope_theta");
            c.putObject("rope_parameters").put("rope_type", "llama3").put("rope_theta", 500000.0).put("factor", 8.0)
                    .put("low_freq_factor", 1.0).put("high_freq_factor", 4.0).put("original_max_position_embeddings", 8);
        }));
        assertEquals(v4, v5);
        assertEquals(500000.0, v5.theta());
        // a 5.x config without rope_theta anywhere else: the base comes from rope_parameters, not the default 10000
        RopeConfig plain = rope(config(c -> {
            c.remove("rope_theta");
            c.putObject("rope_parameters").put("rope_type", "default").put("rope_theta", 500000.0);
        }));
        assertEquals(RotaryTable.standard(8, 500000.0), plain.table(8, 3));
    }

    @Test
    void perLayerTypeParametersApplyWhenEveryTypeHasTheSameAndAreRefusedOtherwise() {
        RopeConfig same = rope(config(c -> {
            c.remove("rope_theta");
            ObjectNode p = c.putObject("rope_parameters");
            p.putObject("full_attention").put("rope_type", "default").put("rope_theta", 1000.0);
            p.putObject("sliding_attention").put("rope_type", "default").put("rope_theta", 1000.0);
        }));
        assertEquals(1000.0, same.theta());
        refused(config(c -> {
            c.remove("rope_theta");
            ObjectNode p = c.putObject("rope_parameters");
            p.putObject("full_attention").put("rope_type", "linear").put("factor", 8.0).put("rope_theta", 1e6);
            p.putObject("sliding_attention").put("rope_type", "default").put("rope_theta", 10000.0);
        }), "field 'rope_parameters'", "'full_attention'", "'sliding_attention'", "one set of rotary parameters");
    }

    @Test
    void ropeFieldsThatCannotBeAppliedAreRefusedNamingThem() {
        refused(config(c -> c.putObject("rope_scaling").put("rope_type", "mrope")), "field 'rope_scaling.rope_type' is 'mrope'",
                "supported: default, linear, dynamic, llama3, yarn, longrope");
        refused(config(c -> c.putObject("rope_scaling").put("rope_type", "linear").put("factor", 2.0).put("mrope_section", 3)),
                "field 'rope_scaling.mrope_section'");
        refused(config(c -> c.putObject("rope_scaling").put("rope_type", "linear")), "field 'rope_scaling.factor' is missing");
        refused(config(c -> c.putObject("rope_scaling").put("rope_type", "llama3").put("factor", 8.0).put("low_freq_factor", 1.0)
                .put("high_freq_factor", 4.0)), "'rope_scaling.original_max_position_embeddings' is missing");
        refused(config(c -> c.putObject("rope_parameters").put("rope_type", "default").put("rope_theta", 1000.0)),
                "field 'rope_theta' is 10000.0 but 'rope_parameters' says rope_theta 1000.0");
        refused(config(c -> {
            ObjectNode s = c.putObject("rope_scaling").put("type", "longrope");
            s.putArray("short_factor").add(1.0);
            s.putArray("long_factor").add(1.0).add(1.0).add(1.0).add(1.0);
        }), "field 'rope_scaling.short_factor' is a list of 1, expected a list of 4");
        refused(config(c -> c.put("partial_rotary_factor", 0.1)), "field 'partial_rotary_factor' is 0.1");
    }
}
