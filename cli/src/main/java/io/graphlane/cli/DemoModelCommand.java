package io.graphlane.cli;

import io.graphlane.core.GraphlaneException;
import io.graphlane.core.tensor.DType;
import io.graphlane.inference.demo.DemoModel;
import io.graphlane.inference.demo.DemoShape;
import io.graphlane.inference.demo.ShapedModelWriter;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code graphlane demo-model --shape NAME --dtype bf16|f32 --out DIR}: writes a Hugging Face model directory of a real
 * model's shape (its config.json fields, tensor names and sizes) with seeded random weights, for measuring the engine on
 * real shapes without a download. Rerun with the same arguments, it finds the model there and writes nothing.
 */
@Command(name = "demo-model", mixinStandardHelpOptions = true,
        description = {"Write random weights of a real model's shape as a Hugging Face model directory.",
            "Shapes: demo (the built-in demo model), llama-3.2-1b, qwen2.5-0.5b, llama-3.1-8b. The weights are seeded",
            "random values: the model's output means nothing, its speed and memory are the real shape's."})
final class DemoModelCommand implements Callable<Integer> {
    @Option(names = "--shape", paramLabel = "NAME", required = true,
            description = "demo, llama-3.2-1b, qwen2.5-0.5b or llama-3.1-8b.")
    String shape;

    @Option(names = "--dtype", paramLabel = "bf16|f32", defaultValue = "bf16", description = "The weights' dtype (default ${DEFAULT-VALUE}).")
    String dtype;

    @Option(names = "--out", paramLabel = "DIR", required = true, description = "The directory to write (must not exist, be empty,"
            + " or hold this same model).")
    Path out;

    @Option(names = "--seed", paramLabel = "N", description = "The seed the weights are drawn from (default: the demo model's).")
    Long seed;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() {
        DemoShape s = DemoShape.of(shape);
        DType d = switch (dtype.trim().toLowerCase(java.util.Locale.ROOT)) {
            case "bf16" -> DType.BF16;
            case "f32" -> DType.F32;
            default -> throw new GraphlaneException("--dtype: expected bf16 or f32, found '" + dtype + "'");
        };
        ShapedModelWriter.Written written = ShapedModelWriter.write(out, s, d, seed == null ? DemoModel.SEED : seed);
        spec.commandLine().getOut().printf("%s %s %s: %d bytes of weights in %s%n", written.reused() ? "found" : "wrote", s.cliName(),
                d.name().toLowerCase(java.util.Locale.ROOT), written.weightBytes(),
                written.reused() ? written.dir() : written.dir() + " (" + written.millis() + " ms)");
        spec.commandLine().getOut().flush();
        return 0;
    }
}
