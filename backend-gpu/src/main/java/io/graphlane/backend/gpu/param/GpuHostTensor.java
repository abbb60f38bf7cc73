package io.graphlane.backend.gpu.param;

import io.graphlane.backend.gpu.PinnedBuffer;
import io.graphlane.core.tensor.TensorSpec;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A host copy of a tensor in pinned memory (the demotion target and promotion source of the GPU
 * backend), dense and little-endian. Handles made by {@link #share()} use the same pinned memory,
 * which is freed when the last handle is closed; each handle closes once (closing it again is a
 * no-op), so a copy in flight can hold its own handle whatever the caller does with theirs.
 */
public final class GpuHostTensor implements AutoCloseable {
    private final String name;
    private final TensorSpec spec;
    private final PinnedBuffer buffer;
    private final AtomicInteger handles;
    private final AtomicBoolean closed = new AtomicBoolean();

    /**
     * The first handle on {@code buffer}, which now belongs to the tensor.
     *
     * @throws IllegalArgumentException naming the tensor if the buffer's size differs from the spec's
     */
    public GpuHostTensor(String name, TensorSpec spec, PinnedBuffer buffer) {
        this(name, spec, buffer, new AtomicInteger(1));
        if (buffer.bytes() != spec.byteSize()) {
            throw new IllegalArgumentException("host tensor " + name + ": " + spec + " needs " + spec.byteSize() + " bytes, buffer has " + buffer.bytes());
        }
    }

    private GpuHostTensor(String name, TensorSpec spec, PinnedBuffer buffer, AtomicInteger handles) {
        this.name = Objects.requireNonNull(name, "name");
        this.spec = Objects.requireNonNull(spec, "spec");
        this.buffer = Objects.requireNonNull(buffer, "buffer");
        this.handles = handles;
    }

    /**
     * Another handle on the same pinned memory, with no copy.
     *
     * @throws IllegalStateException naming the tensor if this handle was closed
     */
    public GpuHostTensor share() {
        if (closed.get()) {
            throw new IllegalStateException("host tensor " + name + ": cannot share a closed handle");
        }
        handles.incrementAndGet();
        return new GpuHostTensor(name, spec, buffer, handles);
    }

    /** The tensor's name. */
    public String name() {
        return name;
    }

    /** Dtype and shape. */
    public TensorSpec spec() {
        return spec;
    }

    /** The pinned bytes, shared by every handle; freed once the last handle is closed. */
    public PinnedBuffer buffer() {
        return buffer;
    }

    /** True once this handle was closed. */
    public boolean isClosed() {
        return closed.get();
    }

    /** Closes this handle; the last one frees the pinned memory. */
    @Override
    public void close() {
        if (closed.compareAndSet(false, true) && handles.decrementAndGet() == 0) {
            buffer.close();
        }
    }

    @Override
    public String toString() {
        return "GpuHostTensor(" + name + " " + spec + (closed.get() ? ", closed" : "") + ")";
    }
}
