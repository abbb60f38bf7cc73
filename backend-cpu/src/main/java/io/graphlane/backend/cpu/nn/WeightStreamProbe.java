package io.graphlane.backend.cpu.nn;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;

/**
 * Measures how fast this machine streams weights through the kernels a decode step can use: the faster of
 * {@link CpuNeuralOps#linear} (the SIMD kernels for a few rows when the JVM has the Vector API) and OpenBLAS
 * (sgemv for a few rows, sgemm for more) over one weight matrix of a given size, with the thread count in force. A decode step of one request reads every weight
 * once, so {@code bytes / seconds} of one row is the bandwidth that bounds it; {@code R} rows give the
 * bound of R requests sharing each weight read (higher, until the products become compute-bound).
 */
public final class WeightStreamProbe {
    /** The matrix's columns: a typical hidden width, so rows are long enough to stream. */
    static final int COLUMNS = 4096;

    private final CpuTensor weight;
    private final long bytes;
    private final CpuNeuralOps ops = new CpuNeuralOps();

    /**
     * A probe over a matrix of about {@code weightBytes} bytes of F32 (at least one row of {@value #COLUMNS}),
     * filled with small values so the products stay finite.
     *
     * @throws IllegalArgumentException if {@code weightBytes} is not positive or the matrix would exceed 2^31 floats
     */
    public WeightStreamProbe(long weightBytes) {
        if (weightBytes <= 0) {
            throw new IllegalArgumentException("weight bytes must be positive, got " + weightBytes);
        }
        long rows = Math.max(1, weightBytes / Float.BYTES / COLUMNS);
        if (rows * COLUMNS > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("a probe of " + weightBytes + " bytes exceeds 2^31 floats; measure a smaller matrix");
        }
        FloatBuffer data = ByteBuffer.allocateDirect(Math.toIntExact(rows * COLUMNS * Float.BYTES)).order(ByteOrder.nativeOrder())
                .asFloatBuffer();
        for (int i = 0; i < data.capacity(); i++) {
            data.put(i, (i % 7) * 1e-3f);
        }
        this.weight = CpuTensor.wrap(data, (int) rows, COLUMNS);
        this.bytes = rows * COLUMNS * Float.BYTES;
    }

    /** The bytes one product reads from the weight matrix. */
    public long bytes() {
        return bytes;
    }

    /**
     * The best time, in seconds, of {@code repeats} products of {@code inputRows} input rows with the whole
     * matrix, each through both kernels (after one warm-up product each), on the calling thread.
     */
    public double bestSeconds(int inputRows, int repeats) {
        // the Java kernels first: OpenBLAS's threads keep spinning for a while after its calls
        double best = bestKernelSeconds(inputRows, repeats);
        return Math.min(best, bestBlasSeconds(inputRows, repeats));
    }

    /**
     * {@link #bestSeconds} through {@link CpuNeuralOps#linear} alone (the SIMD kernels, or OpenBLAS without the Vector
     * API): what a probe between decode rounds runs, since OpenBLAS's threads, once called, keep spinning for a while
     * and would slow the round after the probe.
     */
    public double bestKernelSeconds(int inputRows, int repeats) {
        return timed(inputRows, repeats, false);
    }

    /** {@link #bestSeconds} through OpenBLAS alone ({@code sgemv} for a few rows, {@code sgemm} for more). */
    public double bestBlasSeconds(int inputRows, int repeats) {
        return timed(inputRows, repeats, true);
    }

    private double timed(int inputRows, int repeats, boolean blas) {
        if (inputRows < 1 || repeats < 1) {
            throw new IllegalArgumentException("input rows and repeats must be >= 1, got " + inputRows + " and " + repeats);
        }
        CpuTensor x = CpuTensor.allocate(inputRows, COLUMNS, true);
        CpuTensor out = CpuTensor.allocate(inputRows, weight.rows(), true);
        try {
            return blas ? best(repeats, () -> CpuNeuralOps.blasLinear(x, weight, out)) : best(repeats, () -> ops.linear(x, weight, out));
        } finally {
            x.release();
            out.release();
        }
    }

    private static double best(int repeats, Runnable product) {
        product.run();
        double best = Double.MAX_VALUE;
        for (int r = 0; r < repeats; r++) {
            long t0 = System.nanoTime();
            product.run();
            best = Math.min(best, (System.nanoTime() - t0) / 1e9);
        }
        return best;
    }
}
