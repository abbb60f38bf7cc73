package io.graphlane.inference.weights;

import io.graphlane.checkpoint.CheckpointSource;
import io.graphlane.checkpoint.TensorLocation;
import io.graphlane.checkpoint.safetensors.SafetensorsWriter;
import io.graphlane.core.param.EncodedLease;
import io.graphlane.core.tensor.Shape;
import io.graphlane.core.tensor.TensorSpec;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.function.UnaryOperator;

/** Copies of a single-file fixture checkpoint with one tensor removed or mislabelled, for refusal tests. */
public final class CorruptCheckpoints {
    private CorruptCheckpoints() {
    }

    /** A copy of {@code fixture} in {@code target} without tensor {@code name}. */
    public static Path without(Path fixture, Path target, String name) {
        return rewrite(fixture, target, name, spec -> null);
    }

    /** A copy of {@code fixture} in {@code target} whose 2-D tensor {@code name} claims the transposed shape (same bytes). */
    public static Path transposed(Path fixture, Path target, String name) {
        return rewrite(fixture, target, name, spec -> {
            long[] dims = spec.shape().dims();
            return new TensorSpec(spec.dtype(), Shape.of(dims[1], dims[0]));
        });
    }

    private static Path rewrite(Path fixture, Path target, String name, UnaryOperator<TensorSpec> change) {
        try {
            Files.copy(fixture.resolve("config.json"), target.resolve("config.json"));
            Files.copy(fixture.resolve("tokenizer.json"), target.resolve("tokenizer.json"));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        SafetensorsWriter writer = new SafetensorsWriter();
        boolean found = false;
        try (CheckpointSource source = CheckpointSource.open(fixture)) {
            for (TensorLocation t : source.catalog().tensors().values()) {
                TensorSpec spec = t.spec();
                if (t.name().equals(name)) {
                    found = true;
                    spec = change.apply(spec);
                    if (spec == null) {
                        continue;
                    }
                }
                EncodedLease lease = source.lease(t.name());
                try {
                    ByteBuffer bytes = ByteBuffer.allocate(lease.bytes().remaining()).put(lease.bytes().duplicate()).flip();
                    writer.add(t.name(), spec, bytes);
                } finally {
                    lease.release();
                }
            }
        }
        if (!found) {
            throw new IllegalArgumentException(fixture + " has no tensor " + name);
        }
        writer.write(target.resolve("model.safetensors"));
        return target;
    }
}
