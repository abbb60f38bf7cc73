package io.graphlane.cli;

import io.graphlane.core.GraphlaneException;
import io.graphlane.inference.pipeline.InferencePipeline;
import java.util.function.Consumer;
import picocli.CommandLine.Option;

/** {@code --device-weights-budget} and {@code --offload-lookahead}: layers streamed from host memory (docs/offload.md). */
public final class DeviceWeightsOptions {

    @Option(names = "--device-weights-budget", paramLabel = "SIZE", description = "Hold at most SIZE of weights on the device"
            + " (512m, 4g): the embedding, head and as many layers as fit stay resident, the rest stream from host memory on a"
            + " transfer lane before each use; the plan is printed at start (default: every weight resident).")
    String budget;

    @Option(names = "--offload-lookahead", paramLabel = "L", defaultValue = "1", description = "With --device-weights-budget:"
            + " streamed layers promoted ahead of the one computed (default ${DEFAULT-VALUE}).")
    int lookahead = 1;

    /** Whether a budget was given. */
    public boolean isSet() {
        return budget != null;
    }

    /** The budget in bytes. */
    public long budgetBytes() {
        return SizeOption.parse("--device-weights-budget", budget);
    }

    /** {@code builder} with the budget (if one was given), its plan's lines going to {@code report}. */
    public InferencePipeline.Builder apply(InferencePipeline.Builder builder, Consumer<String> report) {
        if (!isSet()) {
            if (lookahead != 1) {
                throw new GraphlaneException("--offload-lookahead needs --device-weights-budget");
            }
            return builder;
        }
        return builder.deviceWeightsBudget(budgetBytes()).offloadLookahead(lookahead).onOffloadPlan(report);
    }
}
