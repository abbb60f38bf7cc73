package io.graphlane.backend.gpu.nn;

import io.graphlane.backend.gpu.DeviceBuffer;
import io.graphlane.core.tensor.DType;
import jcuda.driver.CUdeviceptr;

/**
 * A dense row-major {@code rows × cols} matrix in device memory, or a view of a row range of
 * one (row slices of a row-major matrix are contiguous, so every view is a plain pointer).
 * Activations are F32; a weight may also be held in 16 bits as stored ({@link DType#BF16},
 * {@link DType#F16}), which {@link GpuNeuralOps#linear} multiplies with cuBLAS's GemmEx
 * (16-bit inputs, F32 accumulation) and {@link GpuNeuralOps#embedding} reads row by row.
 */
public final class GpuMatrix {
    private final DeviceBuffer storage;
    private final long firstElement;
    private final int rows;
    private final int cols;
    private final boolean view;
    private final DType dtype;

    GpuMatrix(DeviceBuffer storage, long firstElement, int rows, int cols, boolean view) {
        this(storage, firstElement, rows, cols, view, DType.F32);
    }

    GpuMatrix(DeviceBuffer storage, long firstElement, int rows, int cols, boolean view, DType dtype) {
        this.storage = storage;
        this.firstElement = firstElement;
        this.rows = rows;
        this.cols = cols;
        this.view = view;
        this.dtype = requireSupported(dtype);
    }

    /** The dtypes a matrix may hold: F32, or a 16-bit weight's BF16 or F16. */
    static DType requireSupported(DType dtype) {
        if (dtype != DType.F32 && dtype != DType.BF16 && dtype != DType.F16) {
            throw new IllegalArgumentException("a GPU matrix holds F32, BF16 or F16, not " + dtype);
        }
        return dtype;
    }

    /** A matrix over all of {@code storage}, which must hold exactly rows × cols floats; the matrix owns it. */
    public static GpuMatrix wrap(DeviceBuffer storage, int rows, int cols) {
        if (rows < 0 || cols < 0 || (long) rows * cols * Float.BYTES != storage.bytes()) {
            throw new IllegalArgumentException("a " + rows + " x " + cols + " F32 matrix needs " + (long) rows * cols * Float.BYTES
                    + " bytes, the buffer has " + storage.bytes());
        }
        return new GpuMatrix(storage, 0, rows, cols, false);
    }

    /**
     * A matrix over all of {@code storage} that somebody else owns (a bound weight): it is a view, so
     * {@link GpuNeuralOps#release} refuses it and only the owner frees the storage.
     */
    public static GpuMatrix borrowed(DeviceBuffer storage, int rows, int cols) {
        return borrowed(storage, rows, cols, DType.F32);
    }

    /**
     * A {@code dtype} matrix (F32, BF16 or F16) over all of {@code storage} that somebody else owns (a bound weight held
     * as stored): a view, which only the owner frees.
     */
    public static GpuMatrix borrowed(DeviceBuffer storage, int rows, int cols, DType dtype) {
        requireSupported(dtype);
        if (rows < 0 || cols < 0 || (long) rows * cols * dtype.byteSize() != storage.bytes()) {
            throw new IllegalArgumentException("a " + rows + " x " + cols + " " + dtype + " matrix needs " + (long) rows * cols * dtype.byteSize()
                    + " bytes, the buffer has " + storage.bytes());
        }
        return new GpuMatrix(storage, 0, rows, cols, true, dtype);
    }

    /** The element type: F32 for activations, BF16 or F16 for a 16-bit weight held as stored. */
    public DType dtype() {
        return dtype;
    }

    /** The number of rows. */
    public int rows() {
        return rows;
    }

    /** The number of columns. */
    public int cols() {
        return cols;
    }

    /** rows × cols. */
    public long elements() {
        return (long) rows * cols;
    }

    /** True for a row slice, which shares its parent's storage and is never released on its own. */
    public boolean isView() {
        return view;
    }

    /** The device memory behind this matrix (its parent's, for a view). */
    public DeviceBuffer storage() {
        return storage;
    }

    /** The device address of element (0, 0). */
    public CUdeviceptr pointer() {
        return storage.pointer(firstElement * dtype.byteSize());
    }

    GpuMatrix rowSlice(int fromRow, int toRow) {
        OpShapes.requireRowRange(rows, fromRow, toRow);
        return new GpuMatrix(storage, firstElement + (long) fromRow * cols, toRow - fromRow, cols, true, dtype);
    }

    @Override
    public String toString() {
        return "GpuMatrix(" + rows + " x " + cols + (dtype == DType.F32 ? "" : " " + dtype) + (view ? ", view" : "") + " on " + storage.device().deviceName() + ")";
    }
}
