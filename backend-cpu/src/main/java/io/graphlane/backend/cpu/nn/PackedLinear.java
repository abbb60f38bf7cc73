package io.graphlane.backend.cpu.nn;

import static org.bytedeco.openblas.global.openblas_nolapack.CblasNoTrans;
import static org.bytedeco.openblas.global.openblas_nolapack.CblasRowMajor;
import static org.bytedeco.openblas.global.openblas_nolapack.CblasTrans;
import static org.bytedeco.openblas.global.openblas_nolapack.cblas_sgemm;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code out = x · Wᵀ} for a {@link PackedMatrix} {@code W}, and with the Vector API for an F32 one. Few rows of
 * {@code x} (decode): every weight row is read once, widened in the loop and dotted with each activation row
 * ({@link VectorKernels}, or without the Vector API {@link PackedKernels}' scalar loops), the weight rows split
 * over {@link RowParallel}'s threads. Many rows (prefill): a tile of weight rows is widened into
 * F32 scratch that stays in cache and multiplied by OpenBLAS {@code sgemm}, tile after tile.
 *
 * <p>Keeps scratch between calls, so an instance belongs to one {@link CpuNeuralOps} (one lane).
 */
final class PackedLinear {
    private static final Logger LOG = LoggerFactory.getLogger(PackedLinear.class);
    private static final AtomicBoolean SCALAR_NOTED = new AtomicBoolean();
    /** F32 elements of one widened tile: 1 MiB, about what a core's L2 holds. */
    private static final int TILE_FLOATS = 256 * 1024;

    private float[] activations = new float[0];
    private float[] rowScratch = new float[0];
    private FloatBuffer tile;
    private final boolean vector;

    /** A projection with the SIMD kernels when the JVM has the Vector API ({@link PackedKernels#VECTOR}). */
    PackedLinear() {
        this(PackedKernels.VECTOR);
    }

    /** A projection with the SIMD kernels only if {@code vector} (tests compare both). */
    PackedLinear(boolean vector) {
        if (vector && !PackedKernels.VECTOR) {
            throw new IllegalStateException("the SIMD kernels need the JVM option --add-modules jdk.incubator.vector");
        }
        this.vector = vector;
    }

    /** {@code out[n × m] = x[n × k] · w[m × k]ᵀ}; shapes were checked by the caller, and n, m, k are positive. */
    void linear(CpuTensor x, PackedMatrix w, CpuTensor out, int rowsForSgemm) {
        if (!vector && w.encoding() != PackedMatrix.Encoding.F16 && SCALAR_NOTED.compareAndSet(false, true)) {
            LOG.info("{} weights use the scalar kernel; start java with --add-modules jdk.incubator.vector for the SIMD one"
                    + " (about four times faster)", w.encoding());
        }
        int n = x.rows();
        if (n < rowsForSgemm && w.encoding() == PackedMatrix.Encoding.Q4_K) {
            KQuantKernels.project(vector, x, w, out);
        } else if (n >= rowsForSgemm) {
            tiled(x, w, out);
        } else {
            rowByRow(x, w, out);
        }
    }

    /**
     * {@code out[n × m] = x[n × k] · w[m × k]ᵀ} for an F32 weight with the SIMD kernel, each weight row read once for
     * every row of {@code x}; only with the Vector API ({@link PackedKernels#VECTOR}). Shapes were checked by the
     * caller, and n, m, k are positive.
     */
    void linearF32(CpuTensor x, CpuTensor w, CpuTensor out) {
        project(null, w.bytes(), w.cols() * Float.BYTES, x, w.rows(), out);
    }

    /**
     * {@code outs[i] = x · weights[i]ᵀ} for every {@code i} with the SIMD kernels, in one pass of the threads over all
     * their rows (q, k and v; gate and up): {@code x} is prepared once, and the threads meet once instead of once per
     * matrix. The weights share one encoding (F32 or {@link #vectorEncoding a SIMD one}) and {@code x} has fewer
     * than {@link CpuNeuralOps#KERNEL_ROWS} rows; shapes were checked by the caller.
     */
    void linearAll(CpuTensor x, CpuTensor[] weights, CpuTensor[] outs) {
        int n = x.rows();
        int k = x.cols();
        PackedMatrix first = weights[0].packed();
        PackedMatrix.Encoding encoding = first == null ? null : first.encoding();
        int count = weights.length;
        ByteBuffer[] bytes = new ByteBuffer[count];
        int[] rowBytes = new int[count];
        int[] ends = new int[count];
        FloatBuffer[] targets = new FloatBuffer[count];
        int total = 0;
        long weightBytes = 0;
        for (int i = 0; i < count; i++) {
            PackedMatrix packed = weights[i].packed();
            bytes[i] = packed == null ? weights[i].bytes() : packed.bytes();
            rowBytes[i] = packed == null ? k * Float.BYTES : packed.rowBytes();
            total += weights[i].rows();
            ends[i] = total;
            weightBytes += (long) rowBytes[i] * weights[i].rows();
            targets[i] = outs[i].data();
        }
        float[] xs = prepared(encoding, x);
        int rows = total;
        RowParallel.forRows(rows, weightBytes / Math.max(1, rows), (from, to) -> {
            int start = 0;
            for (int i = 0; i < count && from < to; i++) {
                int end = ends[i];
                if (from < end) {
                    int stop = Math.min(to, end);
                    VectorKernels.project(encoding, bytes[i], rowBytes[i], xs, n, k, targets[i], end - start, from - start, stop - start);
                    from = stop;
                }
                start = end;
            }
        });
    }

    /** True when {@code w} (null: F32) runs the SIMD kernels of this projection. */
    boolean vectorEncoding(PackedMatrix w) {
        return vector && (w == null || (w.encoding() != PackedMatrix.Encoding.F16 && w.encoding() != PackedMatrix.Encoding.Q4_K));
    }

    private float[] prepared(PackedMatrix.Encoding encoding, CpuTensor x) {
        int n = x.rows();
        int k = x.cols();
        int length = VectorKernels.preparedLength(n, k);
        if (activations.length < length) {
            activations = new float[length];
        }
        VectorKernels.prepare(encoding, x.data(), n, k, activations);
        return activations;
    }

    private void project(PackedMatrix.Encoding encoding, ByteBuffer w, int rowBytes, CpuTensor x, int m, CpuTensor out) {
        int n = x.rows();
        int k = x.cols();
        float[] xs = prepared(encoding, x);
        FloatBuffer target = out.data();
        RowParallel.forRows(m, rowBytes, (from, to) -> VectorKernels.project(encoding, w, rowBytes, xs, n, k, target, m, from, to));
    }

    private void rowByRow(CpuTensor x, PackedMatrix w, CpuTensor out) {
        if (vectorEncoding(w)) {
            project(w.encoding(), w.bytes(), w.rowBytes(), x, w.rows(), out);
            return;
        }
        int n = x.rows();
        int k = x.cols();
        int m = w.rows();
        if (activations.length < n * k) {
            activations = new float[n * k];
        }
        float[] xs = activations;
        x.data().get(0, xs, 0, n * k);
        FloatBuffer target = out.data();
        RowParallel.forRows(m, w.rowBytes(), (from, to) -> {
            for (int j = from; j < to; j++) {
                for (int r = 0; r < n; r++) {
                    target.put(r * m + j, PackedKernels.dot(w, j, xs, r * k));
                }
            }
        });
    }

    private void tiled(CpuTensor x, PackedMatrix w, CpuTensor out) {
        int k = x.cols();
        int m = w.rows();
        int n = x.rows();
        int tileRows = Math.max(1, Math.min(m, TILE_FLOATS / k));
        if (tile == null || tile.capacity() < tileRows * k) {
            tile = ByteBuffer.allocateDirect(tileRows * k * Float.BYTES).order(ByteOrder.nativeOrder()).asFloatBuffer();
        }
        if (rowScratch.length < k) {
            rowScratch = new float[k];
        }
        FloatBuffer target = out.data();
        for (int from = 0; from < m; from += tileRows) {
            int to = Math.min(m, from + tileRows);
            w.widenRows(from, to, tile, rowScratch);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, to - from, k, 1f, x.data(), k, tile, k, 0f,
                    target.slice(from, target.capacity() - from), m);
        }
    }
}
