package io.graphlane.inference.demo;

import io.graphlane.inference.llama.LlamaConfig;
import io.graphlane.inference.llama.LlamaTensors;
import io.graphlane.inference.llama.LlamaTensors.Expected;
import io.graphlane.inference.stage.StagePlan;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * Every weight of a Llama-family model drawn from a fixed seed: matrices from a normal
 * distribution of standard deviation {@code 1/sqrt(fan-in)} (so activations keep their scale
 * through the layers), norm weights near 1, biases near 0. Each tensor has its own generator,
 * seeded from the model seed and the tensor's place in the checkpoint, so one tensor can be drawn
 * without the others and the same seed always gives the same bytes.
 */
public final class SeededWeights {
    private SeededWeights() {
    }

    /** The tensors of the whole model, in checkpoint order. */
    public static List<Expected> tensors(LlamaConfig config) {
        return LlamaTensors.forStage(config, StagePlan.balanced(config.layerCount(), 1).stage(0));
    }

    /** Every tensor of the model, by Hugging Face name, in checkpoint order, as row-major floats. */
    public static Map<String, float[]> generate(LlamaConfig config, long seed) {
        Map<String, float[]> tensors = new LinkedHashMap<>();
        List<Expected> all = tensors(config);
        for (int i = 0; i < all.size(); i++) {
            tensors.put(all.get(i).name(), draw(all.get(i), seed, i));
        }
        return tensors;
    }

    /** Tensor number {@code index} of {@link #tensors}, drawn from its own generator. */
    public static float[] draw(Expected expected, long seed, int index) {
        SplittableRandom random = new SplittableRandom(seed * 0x9E3779B97F4A7C15L + index);
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
