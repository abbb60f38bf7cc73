package io.graphlane.backend.gpu.nn;

import io.graphlane.backend.gpu.DeviceBuffer;
import jcuda.driver.CUdeviceptr;

/**
 * A dense row-major F32 {@code rows × cols} matrix in device memory, or a view of a row range of
 * one (row slices of a row-major matrix are contiguous, so every view is a plain pointer).
 */
public final class GpuMatrix {
    private final DeviceBuffer storage;
    private final long firstElement;
    private final int rows;
    private final int cols;
    private final boolean view;

    GpuMatrix(DeviceBuffer storage, long firstElement, int rows, int cols, boolean view) {
        this.storage = storage;
        this.firstElement = firstElement;
        this.rows = rows;
        this.cols = cols;
        this.view = view;
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
        if (rows < 0 || cols < 0 || (long) rows * cols * Float.BYTES != storage.bytes()) {
            throw new IllegalArgumentException("a " + rows + " x " + cols + " F32 matrix needs " + (long) rows * cols * Float.BYTES
                    + " bytes, the buffer has " + storage.bytes());
        }
        return new GpuMatrix(storage, 0, rows, cols, true);
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
        return storage.pointer(firstElement * Float.BYTES);
    }

    GpuMatrix rowSlice(int fromRow, int toRow) {
        OpShapes.requireRowRange(rows, fromRow, toRow);
        return new GpuMatrix(storage, firstElement + (long) fromRow * cols, toRow - fromRow, cols, true);
    }

    @Override
    public String toString() {
        return "GpuMatrix(" + rows + " x " + cols + (view ? ", view" : "") + " on " + storage.device().deviceName() + ")";
    }
}
