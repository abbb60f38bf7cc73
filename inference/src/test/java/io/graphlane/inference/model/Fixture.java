package io.graphlane.inference.model;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URISyntaxException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** The tiny-llama fixture copied into this module's test resources, and its PyTorch reference values. */
public final class Fixture {
    private Fixture() {
    }

    /** One reference prompt: its ids, the logits PyTorch computed, its 16 greedy tokens. */
    public record Prompt(int[] ids, float[] lastLogitsF32, float[] lastLogitsBf16, float[] firstLogitsF32, int[] greedy16) {
    }

    /** The F32 directory ({@code ""}), or its {@code "bf16"} or {@code "sharded"} variant. */
    public static Path dir(String variant) {
        try {
            Path root = Path.of(Fixture.class.getResource("/tiny-llama/config.json").toURI()).getParent();
            return variant.isEmpty() ? root : root.resolve(variant);
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The prompts of reference.json. */
    public static List<Prompt> prompts() {
        try {
            JsonNode root = new ObjectMapper().readTree(dir("").resolve("reference.json").toFile());
            List<Prompt> prompts = new ArrayList<>();
            for (JsonNode p : root.get("prompts")) {
                prompts.add(new Prompt(ints(p.get("ids")), floats(p.get("last_logits_f32")), floats(p.get("last_logits_bf16_weights")),
                        floats(p.get("first_logits_f32")), ints(p.get("greedy_16"))));
            }
            return prompts;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The largest |expected[i] - found[i]|. */
    public static float maxAbsDifference(float[] expected, float[] found) {
        if (expected.length != found.length) {
            throw new AssertionError("vocabulary size: expected " + expected.length + " logits, found " + found.length);
        }
        float worst = 0;
        for (int i = 0; i < expected.length; i++) {
            worst = Math.max(worst, Math.abs(expected[i] - found[i]));
        }
        return worst;
    }

    /** The index of the largest logit. */
    public static int argmax(float[] logits) {
        int best = 0;
        for (int i = 1; i < logits.length; i++) {
            if (logits[i] > logits[best]) {
                best = i;
            }
        }
        return best;
    }

    /** The largest logit minus the second largest: how far greedy decoding is from picking another token. */
    public static float margin(float[] logits) {
        int best = argmax(logits);
        float second = Float.NEGATIVE_INFINITY;
        for (int i = 0; i < logits.length; i++) {
            if (i != best) {
                second = Math.max(second, logits[i]);
            }
        }
        return logits[best] - second;
    }

    private static int[] ints(JsonNode array) {
        int[] out = new int[array.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = array.get(i).intValue();
        }
        return out;
    }

    private static float[] floats(JsonNode array) {
        float[] out = new float[array.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = (float) array.get(i).doubleValue();
        }
        return out;
    }
}
