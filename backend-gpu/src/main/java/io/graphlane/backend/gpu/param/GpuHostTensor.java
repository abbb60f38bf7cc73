package io.graphlane.backend.gpu.param;

import io.graphlane.backend.gpu.PinnedBuffer;
import io.graphlane.core.tensor.TensorSpec;
import java.util.Objects;

/**
 * A host copy of a tensor in pinned memory (the demotion target and promotion source of the GPU
 * backend). Closing frees the pinned memory once.
 *
 * @param name the tensor's name
 * @param spec dtype and shape
 * @param buffer the pinned bytes, dense and little-endian
 */
public record GpuHostTensor(String name, TensorSpec spec, PinnedBuffer buffer) implements AutoCloseable {
    public GpuHostTensor {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(spec, "spec");
        if (buffer.bytes() != spec.byteSize()) {
            throw new IllegalArgumentException("host tensor " + name + ": " + spec + " needs " + spec.byteSize() + " bytes, buffer has " + buffer.bytes());
        }
    }

    @Override
    public void close() {
        buffer.close();
    }
}
