package io.graphlane.backend.cpu.transfer;

import io.graphlane.backend.cpu.param.CpuWeight;
import java.util.Objects;

/**
 * A host-tier copy of a weight: a {@link CpuWeight} handle whose bytes are ordinary host memory (a
 * materialized weight, a mapped view, or the result of a demotion). Closing it closes the handle.
 */
public final class CpuHostBuffer implements AutoCloseable {
    private final CpuWeight weight;

    /** A host buffer over {@code weight}; the buffer takes over the handle. */
    public CpuHostBuffer(CpuWeight weight) {
        this.weight = Objects.requireNonNull(weight, "weight");
    }

    /** The host weight handle. */
    public CpuWeight weight() {
        return weight;
    }

    /** The weight's name. */
    public String name() {
        return weight.name();
    }

    /** Closes the handle (the bytes are freed when their last handle closes). */
    @Override
    public void close() {
        weight.close();
    }

    @Override
    public String toString() {
        return "CpuHostBuffer(" + weight + ")";
    }
}
