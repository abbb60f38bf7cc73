package io.graphlane.backend.cpu.nn;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.util.Objects;
import org.bytedeco.javacpp.FloatPointer;

/**
 * A dense row-major F32 matrix in off-heap memory: a direct, native-order {@link FloatBuffer}
 * of exactly {@code rows × cols} floats, read and written in place by the CPU neural ops and
 * by OpenBLAS. A tensor either owns its storage (made by {@link CpuNeuralOps#allocate}, freed
 * once by {@link CpuNeuralOps#release}), wraps storage someone else owns (a loaded weight), or
 * is a row view of another tensor. A weight may instead be packed ({@link #wrapPacked}: 16-bit or
 * 8-bit elements that only the projection and embedding ops read).
 */
public final class CpuTensor {
    private final FloatBuffer data;
    private final int rows;
    private final int cols;
    private final FloatPointer storage;
    private final CpuTensor parent;
    private final PackedMatrix packed;
    private final boolean ownsPacked;
    private volatile boolean released;
    /** {@link #data()}'s bytes, made on first use by {@link #bytes()}. */
    private volatile ByteBuffer bytes;

    private CpuTensor(FloatBuffer data, int rows, int cols, FloatPointer storage, CpuTensor parent) {
        this(data, rows, cols, storage, parent, null, false);
    }

    private CpuTensor(FloatBuffer data, int rows, int cols, FloatPointer storage, CpuTensor parent, PackedMatrix packed,
                      boolean ownsPacked) {
        this.data = data;
        this.rows = rows;
        this.cols = cols;
        this.storage = storage;
        this.parent = parent;
        this.packed = packed;
        this.ownsPacked = ownsPacked;
    }

    /** A zero-filled tensor that owns {@code rows × cols} floats of native memory. */
    static CpuTensor allocate(int rows, int cols) {
        return allocate(rows, cols, true);
    }

    /** A tensor that owns {@code rows × cols} floats of native memory, zero-filled only when {@code zero}. */
    static CpuTensor allocate(int rows, int cols, boolean zero) {
        long count = checkedCount(rows, cols);
        FloatPointer pointer = new FloatPointer(Math.max(1, count));
        if (zero) {
            pointer.zero();
        }
        FloatBuffer buffer = count == 0
                ? ByteBuffer.allocateDirect(0).order(ByteOrder.nativeOrder()).asFloatBuffer()
                : pointer.asByteBuffer().order(ByteOrder.nativeOrder()).asFloatBuffer();
        return new CpuTensor(buffer, rows, cols, pointer, null);
    }

    /**
     * A tensor over {@code data}'s remaining floats, which the caller owns and keeps valid while
     * the tensor is used: a direct, native-order buffer holding exactly {@code rows × cols} floats.
     *
     * @throws IllegalArgumentException naming the mismatch otherwise
     */
    public static CpuTensor wrap(FloatBuffer data, int rows, int cols) {
        Objects.requireNonNull(data, "data");
        long count = checkedCount(rows, cols);
        if (!data.isDirect()) {
            throw new IllegalArgumentException("a CPU tensor needs a direct (off-heap) buffer, got a heap buffer of " + data.remaining() + " floats");
        }
        if (data.order() != ByteOrder.nativeOrder()) {
            throw new IllegalArgumentException("a CPU tensor needs a " + ByteOrder.nativeOrder() + " buffer, got " + data.order());
        }
        if (data.remaining() != count) {
            throw new IllegalArgumentException("a " + rows + " x " + cols + " tensor needs " + count + " floats, the buffer holds " + data.remaining());
        }
        return new CpuTensor(data.slice(), rows, cols, null, null);
    }

    /**
     * A weight tensor over {@code matrix} (16-bit or 8-bit elements that someone else owns and keeps valid while
     * the tensor is used): the projection and embedding ops read it, widening as they go; it has no F32
     * {@link #data()} view.
     */
    public static CpuTensor wrapPacked(PackedMatrix matrix) {
        Objects.requireNonNull(matrix, "matrix");
        return new CpuTensor(null, matrix.rows(), matrix.cols(), null, null, matrix, false);
    }

    /**
     * A weight tensor like {@link #wrapPacked} that owns {@code matrix}'s bytes (a buffer made for it alone, freed
     * when unreachable): released once through {@link CpuNeuralOps#release}, and refused after.
     */
    public static CpuTensor ownPacked(PackedMatrix matrix) {
        Objects.requireNonNull(matrix, "matrix");
        return new CpuTensor(null, matrix.rows(), matrix.cols(), null, null, matrix, true);
    }

    /**
     * The packed weight this tensor wraps, or null for an F32 tensor.
     *
     * @throws IllegalStateException if the tensor was released
     */
    public PackedMatrix packed() {
        if (packed != null && released) {
            throw new IllegalStateException("CPU tensor " + this + " was released and cannot be used");
        }
        return packed;
    }

    /** Rows of this tensor. */
    public int rows() {
        return rows;
    }

    /** Columns of this tensor. */
    public int cols() {
        return cols;
    }

    /** The element at ({@code row}, {@code col}). */
    public float get(int row, int col) {
        return data().get(row * cols + col);
    }

    /**
     * The storage as a buffer of exactly {@code rows × cols} floats, position 0; valid while the
     * tensor is. Absolute gets and puts only: the buffer is shared.
     *
     * @throws IllegalStateException if the tensor (or the tensor it views) was released
     */
    public FloatBuffer data() {
        if (packed != null) {
            throw new IllegalStateException("CPU tensor " + this + " holds packed weights; only a projection or an embedding reads it");
        }
        if (released || (parent != null && parent.released)) {
            throw new IllegalStateException("CPU tensor " + this + " was released and cannot be used");
        }
        return data;
    }

    /**
     * The storage of {@link #data()} as little-endian bytes (the SIMD kernels read a weight through it), made once
     * and kept; valid while the tensor is, and only while this tensor is reachable.
     */
    ByteBuffer bytes() {
        FloatBuffer floats = data();
        ByteBuffer view = bytes;
        if (view == null) {
            view = floats.capacity() == 0 ? ByteBuffer.allocateDirect(0)
                    : new FloatPointer(floats).asByteBuffer();
            view = view.order(ByteOrder.LITTLE_ENDIAN);
            bytes = view;
        }
        return view;
    }

    /** A view of rows {@code [fromRow, toRow)} sharing this tensor's storage. */
    CpuTensor rowSlice(int fromRow, int toRow) {
        if (fromRow < 0 || toRow < fromRow || toRow > rows) {
            throw new IndexOutOfBoundsException("row slice [" + fromRow + ", " + toRow + ") is outside the " + rows + " rows of " + this);
        }
        FloatBuffer view = data().slice(fromRow * cols, (toRow - fromRow) * cols);
        return new CpuTensor(view, toRow - fromRow, cols, null, parent != null ? parent : this);
    }

    /** Frees owned storage exactly once. */
    void release() {
        if (parent != null) {
            throw new IllegalStateException("CPU tensor " + this + " is a row view: release the tensor it views instead");
        }
        if (storage == null && !ownsPacked) {
            throw new IllegalStateException("CPU tensor " + this + " wraps storage it does not own: release that storage's owner instead");
        }
        synchronized (this) {
            if (released) {
                throw new IllegalStateException("CPU tensor " + this + " was already released");
            }
            released = true;
        }
        if (storage != null) {
            storage.deallocate();
        }
    }

    /** True once this tensor (or the tensor it views) was released. */
    public boolean isReleased() {
        return released || (parent != null && parent.released);
    }

    private static long checkedCount(int rows, int cols) {
        if (rows < 0 || cols < 0) {
            throw new IllegalArgumentException("tensor dimensions must be >= 0, got " + rows + " x " + cols);
        }
        long count = (long) rows * cols;
        if (count > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("a " + rows + " x " + cols + " tensor has " + count
                    + " floats; a CPU tensor holds at most " + Integer.MAX_VALUE + " (split the weight by rows)");
        }
        return count;
    }

    @Override
    public String toString() {
        return (packed != null ? packed.encoding().name() : "F32") + "[" + rows + ", " + cols + "]";
    }
}
