package io.graphlane.inference.weights;

import io.graphlane.checkpoint.CheckpointSource;
import io.graphlane.checkpoint.Selection;
import io.graphlane.core.GraphlaneException;
import io.graphlane.core.tensor.Shape;
import io.graphlane.inference.llama.LlamaTensors.Expected;
import java.util.List;
import java.util.stream.Collectors;

/** The checks a loader makes against a checkpoint's catalogue before it leases anything. */
public final class CheckpointTensors {
    private CheckpointTensors() {
    }

    /**
     * Refuses a load for which {@code source} lacks any of {@code expected}.
     *
     * @throws GraphlaneException naming the checkpoint directory and every absent tensor with its expected shape
     */
    public static void requirePresent(CheckpointSource source, List<Expected> expected) {
        List<String> absent = expected.stream()
                .filter(e -> !source.catalog().contains(e.sourceName()))
                .map(e -> e.sourceName() + (e.isFused() ? " (holding " + e.name() + ")" : " (expected shape "
                        + Shape.of(e.checkpointShape()) + ")"))
                .collect(Collectors.toList());
        if (!absent.isEmpty()) {
            throw new GraphlaneException("checkpoint " + source.catalog().dir() + " has no tensor " + String.join(", no tensor ", absent));
        }
    }

    /**
     * Refuses a tensor {@code source} holds in another shape than {@code expected}'s.
     *
     * @throws GraphlaneException naming the checkpoint directory, the tensor and both shapes
     */
    static void requireShape(CheckpointSource source, Expected expected) {
        Shape found = source.spec(expected.sourceName(), Selection.all()).shape();
        Shape want = expected.isFused() ? Shape.of(expected.fused().totalRows(), expected.cols()) : Shape.of(expected.checkpointShape());
        if (!found.equals(want)) {
            throw new GraphlaneException("checkpoint " + source.catalog().dir() + ": tensor " + expected.sourceName() + " has shape " + found
                    + ", expected " + want);
        }
    }
}
