package io.graphlane.backend.cpu.param;

import io.graphlane.core.tensor.TensorSpec;
import java.util.Objects;

/**
 * A named parameter slot of a CPU model: the spec and layout it expects, and the weight bound to
 * it. Binding hands the weight handle to the slot; rebinding closes the handle it replaces.
 */
public final class CpuParameter implements AutoCloseable {
    private final String name;
    private final TensorSpec spec;
    private final CpuWeight.Layout layout;
    private volatile CpuWeight bound;

    /** A slot named {@code name} that accepts dense row-major weights of {@code spec}. */
    public CpuParameter(String name, TensorSpec spec) {
        this(name, spec, CpuWeight.Layout.DENSE_ROW_MAJOR);
    }

    /** A slot named {@code name} that accepts weights of {@code spec} in {@code layout}. */
    public CpuParameter(String name, TensorSpec spec, CpuWeight.Layout layout) {
        this.name = Objects.requireNonNull(name, "name");
        this.spec = Objects.requireNonNull(spec, "spec");
        this.layout = Objects.requireNonNull(layout, "layout");
    }

    /** The parameter's name. */
    public String name() {
        return name;
    }

    /** The dtype and shape it accepts. */
    public TensorSpec spec() {
        return spec;
    }

    /** The layout it accepts. */
    public CpuWeight.Layout layout() {
        return layout;
    }

    /** True once a weight is bound. */
    public boolean isBound() {
        return bound != null;
    }

    /**
     * The bound weight.
     *
     * @throws IllegalStateException naming the parameter if nothing is bound
     */
    public CpuWeight weight() {
        CpuWeight w = bound;
        if (w == null) {
            throw new IllegalStateException("parameter " + name + " has no bound weight");
        }
        return w;
    }

    /** Binds {@code weight} (already validated by the backend); the handle it replaces is closed. */
    synchronized void bind(CpuWeight weight) {
        CpuWeight previous = bound;
        bound = weight;
        if (previous != null && previous != weight && !previous.isClosed()) {
            previous.close(); // a handle closed behind the slot's back must not make bind fail
        }
    }

    /** Empties the slot if it holds {@code weight}, without closing it: the caller owns it again. */
    synchronized void unbind(CpuWeight weight) {
        if (bound != weight) {
            throw new IllegalStateException("parameter " + name + " is not bound to the weight being unbound");
        }
        bound = null;
    }

    /** Unbinds and closes the bound handle, if any. */
    @Override
    public synchronized void close() {
        CpuWeight previous = bound;
        bound = null;
        if (previous != null && !previous.isClosed()) {
            previous.close();
        }
    }

    @Override
    public String toString() {
        return "CpuParameter(" + name + ", " + spec + (bound == null ? ", unbound" : ", bound") + ")";
    }
}
