package io.graphlane.checkpoint.safetensors;

import io.graphlane.core.tensor.DType;
import io.graphlane.core.tensor.Shape;
import io.graphlane.core.tensor.TensorSpec;
import java.util.Objects;

/**
 * One validated header entry: a tensor's dtype and shape and its bytes [begin, end) relative to
 * the start of the data region. {@code end - begin} always equals the spec's byte size.
 */
public record TensorEntry(String name, TensorSpec spec, long begin, long end) {
    /** Checks the invariants the header validation established. */
    public TensorEntry {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(spec, "spec");
        if (begin < 0 || end - begin != spec.byteSize()) {
            throw new IllegalArgumentException("tensor '" + name + "': offsets [" + begin + ", " + end
                    + ") do not hold " + spec.byteSize() + " bytes of " + spec);
        }
    }

    /** The tensor's dtype. */
    public DType dtype() {
        return spec.dtype();
    }

    /** The tensor's shape. */
    public Shape shape() {
        return spec.shape();
    }

    /** The tensor's byte length. */
    public long byteLength() {
        return end - begin;
    }
}
