package io.graphlane.backend.cpu.nn;

import static org.bytedeco.openblas.global.openblas_nolapack.CblasNoTrans;
import static org.bytedeco.openblas.global.openblas_nolapack.CblasRowMajor;
import static org.bytedeco.openblas.global.openblas_nolapack.CblasTrans;
import static org.bytedeco.openblas.global.openblas_nolapack.cblas_sgemm;
import static org.bytedeco.openblas.global.openblas_nolapack.cblas_sgemv;

import io.graphlane.core.nn.GateActivation;
import io.graphlane.core.nn.NeuralOps;
import io.graphlane.core.nn.RotaryTable;
import io.graphlane.core.nn.ShapeMismatchException;
import java.nio.ByteBuffer;
import java.nio.FloatBuffer;
import java.util.Objects;

/**
 * {@link NeuralOps} on the CPU: projections through OpenBLAS {@code cblas_sgemm} (one row:
 * {@code cblas_sgemv}) reading off-heap buffers in place, attention over the cache read in place (with the
 * Vector API by {@link VectorAttention}, split over the projections' threads; else as small {@code cblas_sgemm}s), every other operation as a plain loop over them, all in F32; a packed
 * weight ({@link PackedMatrix}) is widened inside the projection ({@link PackedLinear}) and the embedding.
 * Operations run synchronously on the calling thread (a packed projection also on as many pool threads
 * as OpenBLAS is given, as OpenBLAS does).
 *
 * <p>An instance keeps scratch space between calls, so it belongs to one lane (one thread at
 * a time); {@link CpuNeuralBackend#ops} hands out one per lane.
 */
public final class CpuNeuralOps implements NeuralOps<CpuTensor> {
    /** Below this many rows a projection runs as one matrix-vector product per row. */
    static final int GEMV_ROWS = 8;
    /**
     * Below this many rows, with the Vector API, a projection runs the SIMD kernels ({@link VectorKernels}) split over
     * {@link RowParallel}'s threads, reading each weight row once for every input row, instead of OpenBLAS.
     */
    static final int KERNEL_ROWS = 16;

    /** Attention scores of one group of query heads over the cache, reused and grown by doubling. */
    private FloatBuffer scores;
    private CpuTensor scoresStorage;
    private long allocations;
    private float[] inverseFrequencies = new float[0];
    private int cachedHeadDim = -1;
    private float cachedTheta = Float.NaN;
    private final PackedLinear packedLinear = new PackedLinear();

    /** Ops with their own scratch space, for one lane (one thread at a time). */
    public CpuNeuralOps() {
    }

    @Override
    public CpuTensor allocate(int rows, int cols) {
        allocations++;
        return CpuTensor.allocate(rows, cols);
    }

    /**
     * How many tensors of native memory this instance has allocated so far ({@link #allocate},
     * {@link #fromHost}, {@link #fromBuffer}, {@link #allocateUninitialized} and its own scratch
     * space): a warmed decode step should add only the tensor it hands on.
     */
    public long allocationCount() {
        return allocations;
    }

    /**
     * A tensor whose floats are unspecified until written, for a caller that writes every element
     * before any is read (it saves the zero-filling pass over the memory); owned and released like
     * {@link #allocate}.
     */
    public CpuTensor allocateUninitialized(int rows, int cols) {
        allocations++;
        return CpuTensor.allocate(rows, cols, false);
    }

    @Override
    public CpuTensor fromHost(float[] data, int rows, int cols) {
        Objects.requireNonNull(data, "data");
        if ((long) rows * cols != data.length) {
            throw new ShapeMismatchException("fromHost", "data", rows * (long) cols + " floats (" + rows + " x " + cols + ")",
                    data.length + " floats");
        }
        allocations++;
        CpuTensor tensor = CpuTensor.allocate(rows, cols);
        tensor.data().put(0, data);
        return tensor;
    }

    /**
     * A new {@code rows × cols} tensor holding a copy of {@code data}'s remaining floats (any byte
     * order, heap or direct; a memory-mapped checkpoint view copies without a heap detour).
     */
    public CpuTensor fromBuffer(FloatBuffer data, int rows, int cols) {
        if ((long) rows * cols != data.remaining()) {
            throw new ShapeMismatchException("fromBuffer", "data", rows * (long) cols + " floats (" + rows + " x " + cols + ")",
                    data.remaining() + " floats");
        }
        allocations++;
        CpuTensor tensor = CpuTensor.allocate(rows, cols);
        tensor.data().put(0, data, data.position(), data.remaining());
        return tensor;
    }

    @Override
    public void toHost(CpuTensor tensor, float[] out) {
        if (out.length != (long) tensor.rows() * tensor.cols()) {
            throw new ShapeMismatchException("toHost", "out", tensor.rows() * (long) tensor.cols() + " floats for " + tensor,
                    out.length + " floats");
        }
        tensor.data().get(0, out);
    }

    @Override
    public int rows(CpuTensor tensor) {
        return tensor.rows();
    }

    @Override
    public int cols(CpuTensor tensor) {
        return tensor.cols();
    }

    @Override
    public CpuTensor rowSlice(CpuTensor tensor, int fromRow, int toRow) {
        return tensor.rowSlice(fromRow, toRow);
    }

    @Override
    public void release(CpuTensor tensor) {
        tensor.release();
    }

    @Override
    public void copy(CpuTensor source, CpuTensor out) {
        requireSameShape("copy", "out", source, out);
        out.data().put(0, source.data(), 0, source.rows() * source.cols());
    }

    @Override
    public void embedding(CpuTensor table, int[] tokenIds, CpuTensor out) {
        int dim = table.cols();
        ShapeMismatchException.require("embedding", "out", "rows (one per token id)", tokenIds.length, out.rows());
        ShapeMismatchException.require("embedding", "out", "cols (embedding width)", dim, out.cols());
        PackedMatrix packed = table.packed();
        FloatBuffer source = packed == null ? table.data() : null;
        FloatBuffer target = out.data();
        float[] row = packed == null ? null : new float[dim];
        for (int i = 0; i < tokenIds.length; i++) {
            int id = tokenIds[i];
            if (id < 0 || id >= table.rows()) {
                throw new IndexOutOfBoundsException("embedding: token id " + id + " at position " + i
                        + " is outside the vocabulary [0, " + table.rows() + ")");
            }
            if (packed == null) {
                target.put(i * dim, source, id * dim, dim);
            } else {
                packed.widenRow(id, row, 0);
                target.put(i * dim, row, 0, dim);
            }
        }
    }

    @Override
    public void rmsNorm(CpuTensor x, CpuTensor weight, float eps, CpuTensor out) {
        rmsNorm(x, weight, eps, 0f, out);
    }

    @Override
    public void rmsNorm(CpuTensor x, CpuTensor weight, float eps, float weightOffset, CpuTensor out) {
        int dim = x.cols();
        requireVector("rmsNorm", "weight", weight, dim);
        requireSameShape("rmsNorm", "out", x, out);
        FloatBuffer in = x.data();
        FloatBuffer w = weight.data();
        FloatBuffer target = out.data();
        for (int r = 0; r < x.rows(); r++) {
            int base = r * dim;
            double sumOfSquares = 0;
            for (int i = 0; i < dim; i++) {
                float v = in.get(base + i);
                sumOfSquares += v * v;
            }
            normalizeRow(in, w, weightOffset, base, dim, sumOfSquares, eps, target);
        }
    }

    /**
     * {@code x = x + residual}, then {@code out = rmsNorm(x)}, in two passes over each row instead of
     * three: the sum of squares is taken while the sum is written. The same arithmetic as
     * {@link #add} followed by {@link #rmsNorm}, so the same result to the bit.
     */
    @Override
    public void addRmsNorm(CpuTensor x, CpuTensor residual, CpuTensor weight, float eps, CpuTensor out) {
        addRmsNorm(x, residual, weight, eps, 0f, out);
    }

    /** {@link #addRmsNorm(CpuTensor, CpuTensor, CpuTensor, float, CpuTensor)} with the scale {@code weightOffset + weight}. */
    @Override
    public void addRmsNorm(CpuTensor x, CpuTensor residual, CpuTensor weight, float eps, float weightOffset, CpuTensor out) {
        int dim = x.cols();
        requireSameShape("addRmsNorm", "residual", x, residual);
        requireVector("addRmsNorm", "weight", weight, dim);
        requireSameShape("addRmsNorm", "out", x, out);
        FloatBuffer sum = x.data();
        FloatBuffer add = residual.data();
        FloatBuffer w = weight.data();
        FloatBuffer target = out.data();
        for (int r = 0; r < x.rows(); r++) {
            int base = r * dim;
            double sumOfSquares = 0;
            for (int i = 0; i < dim; i++) {
                float v = sum.get(base + i) + add.get(base + i);
                sum.put(base + i, v);
                sumOfSquares += v * v;
            }
            normalizeRow(sum, w, weightOffset, base, dim, sumOfSquares, eps, target);
        }
    }

    private static void normalizeRow(FloatBuffer in, FloatBuffer w, float weightOffset, int base, int dim, double sumOfSquares,
                                     float eps, FloatBuffer target) {
        float scale = (float) (1.0 / Math.sqrt((float) (sumOfSquares / dim) + eps));
        for (int i = 0; i < dim; i++) {
            target.put(base + i, (weightOffset + w.get(i)) * (in.get(base + i) * scale));
        }
    }

    @Override
    public void scale(CpuTensor x, float factor) {
        FloatBuffer data = x.data();
        int n = x.rows() * x.cols();
        for (int i = 0; i < n; i++) {
            data.put(i, data.get(i) * factor);
        }
    }

    /** {@code x = cap · tanh(x / cap)} element-wise, the division and the product in F32 and tanh in double. */
    @Override
    public void softcap(CpuTensor x, float cap) {
        if (!(cap > 0) || Float.isInfinite(cap)) {
            throw new IllegalArgumentException("softcap: cap must be a positive finite number, got " + cap);
        }
        FloatBuffer data = x.data();
        int n = x.rows() * x.cols();
        for (int i = 0; i < n; i++) {
            data.put(i, capped(data.get(i), cap));
        }
    }

    /** {@code cap · tanh(v / cap)}: the soft cap of one value. */
    static float capped(float v, float cap) {
        return cap * (float) Math.tanh(v / cap);
    }

    @Override
    public void linear(CpuTensor x, CpuTensor weight, CpuTensor out) {
        int n = x.rows();
        int k = x.cols();
        int m = weight.rows();
        ShapeMismatchException.require("linear", "weight", "cols (input features of x)", k, weight.cols());
        ShapeMismatchException.require("linear", "out", "rows (rows of x)", n, out.rows());
        ShapeMismatchException.require("linear", "out", "cols (rows of weight)", m, out.cols());
        if (n == 0 || m == 0) {
            return;
        }
        if (k == 0) {
            out.data().put(0, new float[n * m]);
            return;
        }
        if (weight.packed() != null) {
            packedLinear.linear(x, weight.packed(), out, PackedKernels.VECTOR ? KERNEL_ROWS : GEMV_ROWS);
        } else if (PackedKernels.VECTOR && n < KERNEL_ROWS) {
            packedLinear.linearF32(x, weight, out);
        } else {
            blasLinear(x, weight, out);
        }
    }

    /** {@code out = x · weightᵀ} for an F32 weight through OpenBLAS; shapes were checked by the caller. */
    static void blasLinear(CpuTensor x, CpuTensor weight, CpuTensor out) {
        int n = x.rows();
        int k = x.cols();
        int m = weight.rows();
        if (n < GEMV_ROWS) {
            // OpenBLAS's sgemm packs its operands, which costs more than it saves for a few rows
            FloatBuffer w = weight.data();
            FloatBuffer in = x.data();
            FloatBuffer target = out.data();
            for (int r = 0; r < n; r++) {
                cblas_sgemv(CblasRowMajor, CblasNoTrans, m, k, 1f, w, k, in.slice(r * k, k), 1, 0f, target.slice(r * m, m), 1);
            }
        } else {
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, m, k, 1f, x.data(), k, weight.data(), k, 0f, out.data(), m);
        }
    }

    /**
     * {@code outs[i] = x · weights[i]ᵀ} for every {@code i}: the same as {@link #linear} on each pair (to F32
     * rounding), but with a few rows and the Vector API the threads make one pass over all the weights' rows,
     * so a layer's q, k and v projections (or gate and up) cost one hand-off instead of three (two).
     *
     * @throws ShapeMismatchException naming the operand whose shape does not fit, as {@link #linear} does
     * @throws IllegalArgumentException if the arrays differ in length or are empty
     */
    public void linearAll(CpuTensor x, CpuTensor[] weights, CpuTensor[] outs) {
        if (weights.length != outs.length || weights.length == 0) {
            throw new IllegalArgumentException("linearAll needs as many outputs as weights, at least one; got " + weights.length
                    + " weights and " + outs.length + " outputs");
        }
        boolean together = PackedKernels.VECTOR && x.rows() > 0 && x.rows() < KERNEL_ROWS && x.cols() > 0;
        PackedMatrix.Encoding encoding = encodingOf(weights[0]);
        for (int i = 0; i < weights.length; i++) {
            int k = x.cols();
            ShapeMismatchException.require("linear", "weight", "cols (input features of x)", k, weights[i].cols());
            ShapeMismatchException.require("linear", "out", "rows (rows of x)", x.rows(), outs[i].rows());
            ShapeMismatchException.require("linear", "out", "cols (rows of weight)", weights[i].rows(), outs[i].cols());
            together &= encodingOf(weights[i]) == encoding && packedLinear.vectorEncoding(weights[i].packed());
        }
        if (!together) {
            for (int i = 0; i < weights.length; i++) {
                linear(x, weights[i], outs[i]);
            }
            return;
        }
        packedLinear.linearAll(x, weights, outs);
    }

    private static PackedMatrix.Encoding encodingOf(CpuTensor weight) {
        return weight.packed() == null ? null : weight.packed().encoding();
    }

    @Override
    public void addBias(CpuTensor x, CpuTensor bias) {
        int dim = x.cols();
        requireVector("addBias", "bias", bias, dim);
        FloatBuffer target = x.data();
        FloatBuffer b = bias.data();
        for (int r = 0; r < x.rows(); r++) {
            int base = r * dim;
            for (int i = 0; i < dim; i++) {
                target.put(base + i, target.get(base + i) + b.get(i));
            }
        }
    }

    @Override
    public void rope(CpuTensor x, int[] positions, int headDim, RotaryTable table) {
        requireRopeShape("x", x, positions, headDim, table);
        rotate(x, null, positions, headDim, table);
    }

    /** Rotates {@code q} and {@code k} in one pass over the positions: each angle's cosine and sine serve both. */
    @Override
    public void ropeQk(CpuTensor q, CpuTensor k, int[] positions, int headDim, RotaryTable table) {
        requireRopeShape("q", q, positions, headDim, table);
        requireRopeShape("k", k, positions, headDim, table);
        rotate(q, k, positions, headDim, table);
    }

    private static void requireRopeShape(String operand, CpuTensor x, int[] positions, int headDim, RotaryTable table) {
        ShapeMismatchException.require("rope", "positions", "length (rows of " + operand + ")", x.rows(), positions.length);
        if (headDim <= 0 || headDim % 2 != 0 || x.cols() % headDim != 0) {
            throw new ShapeMismatchException("rope", operand, "cols a multiple of an even headDim " + headDim, "cols = " + x.cols());
        }
        if (table.rotaryDim() > headDim) {
            throw new ShapeMismatchException("rope", "table", "a rotary width of at most headDim " + headDim,
                    "rotaryDim = " + table.rotaryDim());
        }
    }

    /**
     * Rotates the first {@code table.rotaryDim()} features of every head of {@code a} and, unless null, of {@code b},
     * both of {@code positions.length} rows. The angle is computed in double (position times frequency), then its
     * cosine and sine are scaled and rounded to F32.
     */
    private void rotate(CpuTensor a, CpuTensor b, int[] positions, int headDim, RotaryTable table) {
        int half = table.rotaryDim() / 2;
        double scaling = table.attentionScaling();
        FloatBuffer first = a.data();
        FloatBuffer second = b == null ? null : b.data();
        for (int r = 0; r < positions.length; r++) {
            double position = positions[r];
            for (int i = 0; i < half; i++) {
                double angle = position * table.frequency(i);
                float cos = (float) (Math.cos(angle) * scaling);
                float sin = (float) (Math.sin(angle) * scaling);
                rotatePair(first, r * a.cols() + i, a.cols() / headDim, headDim, half, cos, sin);
                if (second != null) {
                    rotatePair(second, r * b.cols() + i, b.cols() / headDim, headDim, half, cos, sin);
                }
            }
        }
    }

    /** Rotates the pair {@code (i, i + half)} of each of {@code heads} heads of a row, {@code start} being the first head's {@code i}. */
    private static void rotatePair(FloatBuffer data, int start, int heads, int headDim, int half, float cos, float sin) {
        for (int h = 0; h < heads; h++) {
            int first = start + h * headDim;
            int second = first + half;
            float x1 = data.get(first);
            float x2 = data.get(second);
            data.put(first, x1 * cos - x2 * sin);
            data.put(second, x2 * cos + x1 * sin);
        }
    }

    @Override
    public void rmsNormHeads(CpuTensor x, CpuTensor weight, float eps, int headDim) {
        rmsNormHeads(x, weight, eps, headDim, 0f);
    }

    @Override
    public void rmsNormHeads(CpuTensor x, CpuTensor weight, float eps, int headDim, float weightOffset) {
        if (headDim <= 0 || x.cols() % headDim != 0) {
            throw new ShapeMismatchException("rmsNormHeads", "x", "cols a multiple of headDim " + headDim, "cols = " + x.cols());
        }
        requireVector("rmsNormHeads", "weight", weight, headDim);
        FloatBuffer data = x.data();
        FloatBuffer w = weight.data();
        int heads = x.rows() * (x.cols() / headDim);
        for (int h = 0; h < heads; h++) {
            int base = h * headDim;
            double sum = 0;
            for (int i = 0; i < headDim; i++) {
                float v = data.get(base + i);
                sum += v * v;
            }
            float inv = (float) (1.0 / Math.sqrt(sum / headDim + eps));
            for (int i = 0; i < headDim; i++) {
                data.put(base + i, data.get(base + i) * inv * (weightOffset + w.get(i)));
            }
        }
    }

    /**
     * For each query row and each key/value head, over the cache rows the row sees (those of its window, see
     * {@link io.graphlane.core.nn.NeuralOps#attention(Object, Object, Object, int[], int, int, int, int, Object)}): the
     * scores of the head's group of query heads against the keys, {@code S = scale · Q·Kᵀ}, then after a row softmax
     * {@code S·V}, written straight into {@code out}. The cache is read in place (strided by its width), from the window's
     * first row. With the Vector API {@link VectorAttention} computes each (row, head) unit and the units are split over
     * {@link RowParallel}'s threads; otherwise two small OpenBLAS products per unit ({@link #blasAttention}), the scores
     * in one scratch buffer reused across calls.
     */
    @Override
    public void attention(CpuTensor q, CpuTensor keys, CpuTensor values, int[] positions,
                          int headCount, int kvHeadCount, int headDim, int window, CpuTensor out) {
        attention(q, keys, values, positions, headCount, kvHeadCount, headDim, window, NeuralOps.plainAttentionScale(headDim), 0f, out);
    }

    /**
     * {@link #attention(CpuTensor, CpuTensor, CpuTensor, int[], int, int, int, int, CpuTensor)} with the scores
     * {@code scale · Q·Kᵀ}, soft-capped to {@code softcap · tanh(S / softcap)} when {@code softcap > 0} before the softmax.
     */
    @Override
    public void attention(CpuTensor q, CpuTensor keys, CpuTensor values, int[] positions,
                          int headCount, int kvHeadCount, int headDim, int window, float scale, float softcap, CpuTensor out) {
        int seenMost = checkAttention(q, keys, values, positions, headCount, kvHeadCount, headDim, window, out);
        checkScores(scale, softcap);
        if (!PackedKernels.VECTOR) {
            blasAttention(q, keys, values, positions, headCount, kvHeadCount, headDim, window, scale, softcap, out);
            return;
        }
        int groupSize = headCount / kvHeadCount;
        int kvWidth = keys.cols();
        int groupWidth = groupSize * headDim;
        FloatBuffer queries = q.data();
        FloatBuffer target = out.data();
        // one unit per query row and key/value head, split over the threads a projection uses
        ByteBuffer keyBytes = keys.bytes();
        ByteBuffer valueBytes = values.bytes();
        int qCols = q.cols();
        RowParallel.forRows(q.rows() * kvHeadCount, 2L * Float.BYTES * seenMost * headDim, (from, to) -> {
            for (int unit = from; unit < to; unit++) {
                int r = unit / kvHeadCount;
                int kvHead = unit % kvHeadCount;
                int queryBase = r * qCols + kvHead * groupWidth;
                int first = firstAttended(positions[r], window);
                // the window's rows as rows [0, seen) of a cache that starts at row `first`
                VectorAttention.attend(queries, queryBase, groupSize, headDim, scale, softcap, keyBytes, valueBytes, kvWidth,
                        first * kvWidth + kvHead * headDim, positions[r] + 1 - first, target, queryBase);
            }
        });
    }

    /**
     * {@link #attention} through OpenBLAS (the form used without the Vector API): per query row and key/value head,
     * {@code S = scale · Q·Kᵀ} over the window's cache rows, a row softmax, then {@code S·V}.
     */
    void blasAttention(CpuTensor q, CpuTensor keys, CpuTensor values, int[] positions,
                       int headCount, int kvHeadCount, int headDim, int window, CpuTensor out) {
        blasAttention(q, keys, values, positions, headCount, kvHeadCount, headDim, window, NeuralOps.plainAttentionScale(headDim), 0f, out);
    }

    /** {@link #blasAttention(CpuTensor, CpuTensor, CpuTensor, int[], int, int, int, int, CpuTensor)} with a score scale and soft cap. */
    void blasAttention(CpuTensor q, CpuTensor keys, CpuTensor values, int[] positions,
                       int headCount, int kvHeadCount, int headDim, int window, float scale, float softcap, CpuTensor out) {
        checkAttention(q, keys, values, positions, headCount, kvHeadCount, headDim, window, out);
        checkScores(scale, softcap);
        int groupSize = headCount / kvHeadCount;
        int kvWidth = keys.cols();
        int groupWidth = groupSize * headDim;
        FloatBuffer queries = q.data();
        FloatBuffer target = out.data();
        FloatBuffer k = keys.data();
        FloatBuffer v = values.data();
        for (int r = 0; r < q.rows(); r++) {
            int first = firstAttended(positions[r], window);
            int seen = positions[r] + 1 - first;
            FloatBuffer s = scores(groupSize * seen);
            // the cache rows [first, first + seen) of one head: seen rows of headDim floats, kvWidth apart
            int cacheSpan = (seen - 1) * kvWidth + headDim;
            for (int kvHead = 0; kvHead < kvHeadCount; kvHead++) {
                int queryBase = r * q.cols() + kvHead * groupWidth;
                int kvOffset = first * kvWidth + kvHead * headDim;
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, groupSize, seen, headDim, scale,
                        queries.slice(queryBase, groupWidth), headDim, k.slice(kvOffset, cacheSpan), kvWidth, 0f, s, seen);
                if (softcap > 0) {
                    for (int i = 0; i < groupSize * seen; i++) {
                        s.put(i, capped(s.get(i), softcap));
                    }
                }
                softmaxRows(s, groupSize, seen);
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, groupSize, headDim, seen, 1f,
                        s, seen, v.slice(kvOffset, cacheSpan), kvWidth, 0f, target.slice(queryBase, groupWidth), headDim);
            }
        }
    }

    /**
     * The first cache row a query at {@code position} attends to within {@code window}: the keys {@code j <= position}
     * with {@code position - j < window} (Hugging Face's {@code kv_idx > q_idx - sliding_window}), so
     * {@code max(0, position - window + 1)}; 0 for {@link io.graphlane.core.nn.NeuralOps#NO_WINDOW}.
     */
    static int firstAttended(int position, int window) {
        // position >= 0 and window >= 1: position - window + 1 cannot overflow
        return Math.max(0, position - window + 1);
    }

    private static void checkScores(float scale, float softcap) {
        if (!(scale > 0) || Float.isInfinite(scale)) {
            throw new IllegalArgumentException("attention: score scale must be a positive finite number, got " + scale);
        }
        if (!(softcap >= 0) || Float.isInfinite(softcap)) {
            throw new IllegalArgumentException("attention: soft cap must be 0 (none) or a positive finite number, got " + softcap);
        }
    }

    /** Checks the attention operands; returns the most cache rows any query row reads. */
    private static int checkAttention(CpuTensor q, CpuTensor keys, CpuTensor values, int[] positions,
                                      int headCount, int kvHeadCount, int headDim, int window, CpuTensor out) {
        if (headCount <= 0 || kvHeadCount <= 0 || headCount % kvHeadCount != 0) {
            throw new ShapeMismatchException("attention", "kvHeadCount", "a positive divisor of headCount " + headCount,
                    String.valueOf(kvHeadCount));
        }
        if (window < 1) {
            throw new IllegalArgumentException("attention: window must be at least 1 position (or NO_WINDOW), got " + window);
        }
        ShapeMismatchException.require("attention", "q", "cols (headCount x headDim)", (long) headCount * headDim, q.cols());
        ShapeMismatchException.require("attention", "keys", "cols (kvHeadCount x headDim)", (long) kvHeadCount * headDim, keys.cols());
        requireSameShape("attention", "values", keys, values);
        requireSameShape("attention", "out", q, out);
        ShapeMismatchException.require("attention", "positions", "length (rows of q)", q.rows(), positions.length);
        int seenMost = 0;
        for (int r = 0; r < q.rows(); r++) {
            if (positions[r] < 0 || positions[r] >= keys.rows()) {
                throw new IndexOutOfBoundsException("attention: position " + positions[r] + " of query row " + r
                        + " is outside the key/value cache of " + keys.rows() + " rows");
            }
            seenMost = Math.max(seenMost, positions[r] + 1 - firstAttended(positions[r], window));
        }
        return seenMost;
    }

    @Override
    public void siluMul(CpuTensor gate, CpuTensor up, CpuTensor out) {
        requireSameShape("siluMul", "up", gate, up);
        requireSameShape("siluMul", "out", gate, out);
        FloatBuffer g = gate.data();
        FloatBuffer u = up.data();
        FloatBuffer target = out.data();
        int n = gate.rows() * gate.cols();
        for (int i = 0; i < n; i++) {
            float x = g.get(i);
            target.put(i, x / (1f + (float) Math.exp(-x)) * u.get(i));
        }
    }

    @Override
    public void gatedMul(CpuTensor gate, CpuTensor up, CpuTensor out, GateActivation activation) {
        if (activation == GateActivation.SILU) {
            siluMul(gate, up, out);
            return;
        }
        requireSameShape("gatedMul", "up", gate, up);
        requireSameShape("gatedMul", "out", gate, out);
        FloatBuffer g = gate.data();
        FloatBuffer u = up.data();
        FloatBuffer target = out.data();
        int n = gate.rows() * gate.cols();
        for (int i = 0; i < n; i++) {
            target.put(i, (float) (activation.apply(g.get(i)) * u.get(i)));
        }
    }

    @Override
    public void add(CpuTensor a, CpuTensor b, CpuTensor out) {
        requireSameShape("add", "b", a, b);
        requireSameShape("add", "out", a, out);
        FloatBuffer left = a.data();
        FloatBuffer right = b.data();
        FloatBuffer target = out.data();
        int n = a.rows() * a.cols();
        for (int i = 0; i < n; i++) {
            target.put(i, left.get(i) + right.get(i));
        }
    }

    @Override
    public void softmax(CpuTensor x) {
        softmaxRows(x.data(), x.rows(), x.cols());
    }

    /** Replaces each of the first {@code rows} rows of {@code cols} floats by its softmax, in F32 with the row maximum subtracted. */
    private static void softmaxRows(FloatBuffer data, int rows, int cols) {
        for (int r = 0; r < rows; r++) {
            int base = r * cols;
            float max = Float.NEGATIVE_INFINITY;
            for (int i = 0; i < cols; i++) {
                max = Math.max(max, data.get(base + i));
            }
            float sum = 0f;
            for (int i = 0; i < cols; i++) {
                float e = (float) Math.exp(data.get(base + i) - max);
                data.put(base + i, e);
                sum += e;
            }
            for (int i = 0; i < cols; i++) {
                data.put(base + i, data.get(base + i) / sum);
            }
        }
    }

    @Override
    public int[] argmax(CpuTensor x) {
        FloatBuffer data = x.data();
        int cols = x.cols();
        int[] result = new int[x.rows()];
        for (int r = 0; r < x.rows(); r++) {
            int base = r * cols;
            int best = 0;
            float bestValue = Float.NEGATIVE_INFINITY;
            for (int i = 0; i < cols; i++) {
                float v = data.get(base + i);
                if (v > bestValue) {
                    bestValue = v;
                    best = i;
                }
            }
            result[r] = best;
        }
        return result;
    }

    /** HF's inv_freq in F32: {@code 1 / theta^((2i) / headDim)}, cached for the last (headDim, theta). */
    private float[] inverseFrequencies(int headDim, float theta) {
        if (headDim != cachedHeadDim || Float.compare(theta, cachedTheta) != 0) {
            float[] invFreq = new float[headDim / 2];
            for (int i = 0; i < invFreq.length; i++) {
                float exponent = (float) (2 * i) / headDim;
                invFreq[i] = 1f / (float) Math.pow(theta, exponent);
            }
            inverseFrequencies = invFreq;
            cachedHeadDim = headDim;
            cachedTheta = theta;
        }
        return inverseFrequencies;
    }

    /** The scores scratch buffer holding at least {@code floats} floats, grown by doubling (rarely: it only follows the longest sequence). */
    private FloatBuffer scores(int floats) {
        if (scoresStorage == null || scoresStorage.cols() < floats) {
            int size = Math.max(floats, scoresStorage == null ? 256 : 2 * scoresStorage.cols());
            if (scoresStorage != null) {
                scoresStorage.release();
            }
            scoresStorage = allocateUninitialized(1, size);
            scores = scoresStorage.data();
        }
        return scores;
    }

    private static void requireSameShape(String operation, String operand, CpuTensor expected, CpuTensor found) {
        if (expected.rows() != found.rows() || expected.cols() != found.cols()) {
            throw new ShapeMismatchException(operation, operand, expected.toString(), found.toString());
        }
    }

    private static void requireVector(String operation, String operand, CpuTensor vector, int cols) {
        if (vector.rows() != 1 || vector.cols() != cols) {
            throw new ShapeMismatchException(operation, operand, "F32[1, " + cols + "]", vector.toString());
        }
    }
}
