package io.graphlane.inference.demo;

import io.graphlane.inference.llama.LlamaConfig;
import io.graphlane.inference.llama.LlamaTensors;
import io.graphlane.inference.llama.LlamaTensors.Expected;
import io.graphlane.inference.stage.StagePlan;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * Every weight of a Llama-family model drawn from a fixed seed: matrices from a normal
 * distribution of standard deviation {@code 1/sqrt(fan-in)} (so activations keep their scale
 * through the layers), norm weights near 1, biases near 0. The same seed and configuration
 * always give the same bytes.
 */
public final class SeededWeights {
    private SeededWeights() {
    }

    /** Every tensor of the model, by Hugging Face name, in checkpoint order, as row-major floats. */
    public static Map<String, float[]> generate(LlamaConfig config, long seed) {
        SplittableRandom random = new SplittableRandom(seed);
        Map<String, float[]> tensors = new LinkedHashMap<>();
        StagePlan whole = StagePlan.balanced(config.layerCount(), 1);
        for (Expected expected : LlamaTensors.forStage(config, whole.stage(0))) {
            tensors.computeIfAbsent(expected.name(), name -> draw(expected, random));
        }
        return tensors;
    }

    private static float[] draw(Expected expected, SplittableRandom random) {
        float[] values = new float[expected.rows() * expected.cols()];
        boolean norm = expected.name().endsWith("norm.weight");
        boolean bias = expected.name().endsWith(".bias");
        double std = norm ? 0.1 : bias ? 0.02 : 1 / Math.sqrt(expected.cols());
        for (int i = 0; i < values.length; i++) {
            values[i] = (float) ((norm ? 1 : 0) + std * gaussian(random));
        }
        return values;
    }

    /** A standard normal draw (Box–Muller), reproducible from the generator's state. */
    private static double gaussian(SplittableRandom random) {
        double u = 1 - random.nextDouble();
        double v = random.nextDouble();
        return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
    }
}
