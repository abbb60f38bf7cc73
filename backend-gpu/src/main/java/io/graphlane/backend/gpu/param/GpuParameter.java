package io.graphlane.backend.gpu.param;

import io.graphlane.core.tensor.TensorSpec;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;

/** One parameter slot of a model on the GPU: the name and device spec it expects, and the weight bound to it. */
public final class GpuParameter {
    private final String name;
    private final TensorSpec expected;
    private final AtomicReference<GpuWeight> bound = new AtomicReference<>();

    public GpuParameter(String name, TensorSpec expected) {
        this.name = Objects.requireNonNull(name, "name");
        this.expected = Objects.requireNonNull(expected, "expected");
    }

    /** The parameter's name. */
    public String name() {
        return name;
    }

    /** The device dtype and shape a weight must have to be bound. */
    public TensorSpec expected() {
        return expected;
    }

    /** The bound weight, once bound. */
    public Optional<GpuWeight> weight() {
        return Optional.ofNullable(bound.get());
    }

    void set(GpuWeight weight) {
        bound.set(weight);
    }

    /** Empties the slot if it holds {@code weight}, without closing it: the caller owns it again. */
    void unset(GpuWeight weight) {
        if (!bound.compareAndSet(weight, null)) {
            throw new IllegalStateException("parameter " + name() + " is not bound to the weight being unbound");
        }
    }
}
