package io.graphlane.backend.cpu.param;

import io.graphlane.core.tensor.DType;
import io.graphlane.core.tensor.TensorSpec;
import java.nio.ByteBuffer;
import java.nio.FloatBuffer;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One handle on a materialized CPU weight: a name, a {@link TensorSpec}, and dense row-major
 * little-endian bytes in reference-counted {@link CpuStorage}. Floating-point checkpoint data is
 * always F32 here ({@link #floats()}); other dtypes keep their encoded bytes. Handles made by
 * {@link #share()} see the same bytes; each handle is closed exactly once, and the storage is
 * freed when the last handle closes.
 */
public final class CpuWeight implements AutoCloseable {

    /** How elements are laid out in memory; CPU weights are always dense and row-major. */
    public enum Layout {
        /** Dense, row-major (C order), little-endian, no padding. */
        DENSE_ROW_MAJOR
    }

    private final String name;
    private final TensorSpec spec;
    private final CpuStorage storage;
    private final AtomicBoolean closed = new AtomicBoolean();

    /**
     * A handle that takes over one reference of {@code storage}.
     *
     * @throws IllegalArgumentException naming the weight if the storage size differs from the spec's
     */
    public CpuWeight(String name, TensorSpec spec, CpuStorage storage) {
        this.name = Objects.requireNonNull(name, "name");
        this.spec = Objects.requireNonNull(spec, "spec");
        this.storage = Objects.requireNonNull(storage, "storage");
        if (storage.byteSize() != spec.byteSize()) {
            throw new IllegalArgumentException("weight " + name + ": storage holds " + storage.byteSize()
                    + " bytes, spec " + spec + " needs " + spec.byteSize());
        }
    }

    /** The weight's name (the parameter it is meant for). */
    public String name() {
        return name;
    }

    /** Its dtype and shape. */
    public TensorSpec spec() {
        return spec;
    }

    /** Its memory layout. */
    public Layout layout() {
        return Layout.DENSE_ROW_MAJOR;
    }

    /** The storage behind this handle, shared with every handle made by {@link #share()}. */
    public CpuStorage storage() {
        return storage;
    }

    /** True if the bytes are the checkpoint's mapped bytes used in place. */
    public boolean isZeroCopy() {
        return storage.kind() == CpuStorage.Kind.MAPPED_VIEW;
    }

    /**
     * A fresh read-only little-endian view of the bytes.
     *
     * @throws IllegalStateException naming the weight if this handle was closed
     */
    public ByteBuffer bytes() {
        checkOpen();
        return storage.buffer().asReadOnlyBuffer().order(java.nio.ByteOrder.LITTLE_ENDIAN);
    }

    /**
     * A fresh read-only view of the elements as F32.
     *
     * @throws IllegalStateException naming the weight if its dtype is not F32 or this handle was closed
     */
    public FloatBuffer floats() {
        if (spec.dtype() != DType.F32) {
            throw new IllegalStateException("weight " + name + " is " + spec.dtype() + ", not F32: it has no float view");
        }
        return bytes().asFloatBuffer();
    }

    /**
     * Another handle on the same bytes, with no copy; it must be closed on its own.
     *
     * @throws IllegalStateException naming the weight if this handle was closed
     */
    public CpuWeight share() {
        checkOpen();
        return new CpuWeight(name, spec, storage.retain());
    }

    /** True once this handle was closed. */
    public boolean isClosed() {
        return closed.get();
    }

    /**
     * Closes this handle; the storage is freed when its last handle closes.
     *
     * @throws IllegalStateException naming the weight if this handle was already closed
     */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            throw new IllegalStateException("weight " + name + " was already closed");
        }
        storage.release();
    }

    private void checkOpen() {
        if (closed.get()) {
            throw new IllegalStateException("weight " + name + " was already closed");
        }
    }

    @Override
    public String toString() {
        return "CpuWeight(" + name + ", " + spec + ", " + storage.kind() + (closed.get() ? ", closed" : "") + ")";
    }
}
