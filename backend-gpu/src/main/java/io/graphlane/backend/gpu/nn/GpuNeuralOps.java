package io.graphlane.backend.gpu.nn;

import io.graphlane.backend.gpu.CudaLibraries;
import io.graphlane.backend.gpu.CudaLibrary;
import io.graphlane.backend.gpu.DeviceBuffer;
import io.graphlane.backend.gpu.GpuBackend;
import io.graphlane.backend.gpu.GpuStream;
import io.graphlane.backend.gpu.HostBufferPool;
import io.graphlane.backend.gpu.JavaCppAddresses;
import io.graphlane.backend.gpu.PinnedBuffer;
import io.graphlane.core.GraphlaneException;
import io.graphlane.core.nn.HostCopy;
import io.graphlane.core.nn.GateActivation;
import io.graphlane.core.nn.NeuralOps;
import io.graphlane.core.nn.RotaryTable;
import io.graphlane.core.nn.ShapeMismatchException;
import io.graphlane.core.tensor.DType;
import java.util.Objects;
import jcuda.Pointer;
import jcuda.driver.CUresult;
import jcuda.driver.JCudaDriver;
import org.bytedeco.cuda.cublas.cublasContext;
import org.bytedeco.cuda.global.cublas;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.FloatPointer;

/**
 * {@link NeuralOps} on one CUDA stream: projections through cuBLAS ({@code cublasSgemm}, one
 * row {@code cublasSgemv}; over a 16-bit weight held as stored, {@code cublasGemmEx} with the input
 * rounded to the weight's type and F32 accumulation into an F32 output), every other operation a
 * kernel of {@link KernelSources}. Every
 * operation only enqueues (host values go up with asynchronous copies on the stream);
 * {@link #toHost} and {@link #argmax} synchronize the stream before they return, and
 * {@link #copyToHost} enqueues a copy into pinned memory that is read after the lane work completes. Tensors are allocated on this lane's stream; freed tensors and per-call scratch
 * (token ids, positions) go back to the memory pool in the stream's order, behind the work enqueued
 * before the release, never earlier (without memory pools: at that work's exact completion).
 */
public final class GpuNeuralOps implements NeuralOps<GpuMatrix> {
    private static final int BLOCK = KernelSources.BLOCK;
    /** Shared memory a block may use without opting in: the attention kernel's scores must fit in it. */
    private static final int DEFAULT_SHARED_LIMIT = 48 * 1024 - BLOCK * Float.BYTES;

    private final GpuStream stream;
    private final GpuBackend device;
    private final GpuKernels kernels;
    private final cublasContext blas = new cublasContext();
    /** The host scalars 1 and 0 of every SGEMM/SGEMV (cuBLAS's default pointer mode reads them on the host at the call). */
    private final FloatPointer one = new FloatPointer(1f);
    private final FloatPointer zero = new FloatPointer(0f);

    /** Ops on {@code stream} with kernels compiled for its device; needs cuBLAS ({@link CudaLibrary#CUBLAS}). */
    public GpuNeuralOps(GpuStream stream, GpuKernels kernels) {
        this.stream = Objects.requireNonNull(stream, "stream");
        this.device = stream.backend();
        this.kernels = Objects.requireNonNull(kernels, "kernels");
        if (kernels.device() != device) {
            throw new IllegalArgumentException("kernels of " + kernels.device().deviceName() + " cannot run on " + stream.name());
        }
        CudaLibraries.require(CudaLibrary.CUBLAS);
        device.makeCurrent();
        checkBlas(cublas.cublasCreate_v2(blas), "cublasCreate");
        checkBlas(cublas.cublasSetStream_v2(blas, JavaCppAddresses.stream(stream.cuStream())), "cublasSetStream");
    }

    @Override
    public GpuMatrix allocate(int rows, int cols) {
        GpuMatrix m = newMatrix(rows, cols);
        check(JCudaDriver.cuMemsetD32Async(m.pointer(), 0, m.elements(), stream.cuStream()), "cuMemsetD32Async");
        return m;
    }

    @Override
    public GpuMatrix fromHost(float[] data, int rows, int cols) {
        Objects.requireNonNull(data, "data");
        if ((long) rows * cols != data.length) {
            throw new ShapeMismatchException("fromHost", "data", rows * (long) cols + " floats (" + rows + " x " + cols + ")",
                    data.length + " floats");
        }
        GpuMatrix m = newMatrix(rows, cols);
        uploadOnStream(m.pointer(), Pointer.to(data), (long) data.length * Float.BYTES);
        return m;
    }

    @Override
    public void toHost(GpuMatrix tensor, float[] out) {
        requireF32("toHost", "tensor", tensor);
        if (out.length != tensor.elements()) {
            throw new ShapeMismatchException("toHost", "out", tensor.elements() + " floats for " + tensor, out.length + " floats");
        }
        device.makeCurrent();
        stream.synchronize();
        check(JCudaDriver.cuMemcpyDtoH(Pointer.to(out), tensor.pointer(), (long) out.length * Float.BYTES), "cuMemcpyDtoH");
    }

    @Override
    public int rows(GpuMatrix tensor) {
        return tensor.rows();
    }

    @Override
    public int cols(GpuMatrix tensor) {
        return tensor.cols();
    }

    @Override
    public GpuMatrix rowSlice(GpuMatrix tensor, int fromRow, int toRow) {
        return tensor.rowSlice(fromRow, toRow);
    }

    @Override
    public void release(GpuMatrix tensor) {
        if (tensor.isView()) {
            throw new IllegalStateException("release: " + tensor + " is a view; release the tensor it was sliced from");
        }
        if (tensor.storage().isFreed()) {
            throw new IllegalStateException("release: " + tensor + " was already released");
        }
        releaseAfterEnqueuedWork(tensor.storage(), "release");
    }

    @Override
    public void copy(GpuMatrix source, GpuMatrix out) {
        OpShapes.requireSame("copy", "out", source.rows(), source.cols(), out.rows(), out.cols());
        requireF32("copy", "source", source);
        requireF32("copy", "out", out);
        device.makeCurrent();
        check(JCudaDriver.cuMemcpyDtoDAsync(out.pointer(), source.pointer(), source.elements() * Float.BYTES, stream.cuStream()),
                "cuMemcpyDtoDAsync");
    }

    @Override
    public void embedding(GpuMatrix table, int[] tokenIds, GpuMatrix out) {
        ShapeMismatchException.require("embedding", "out", "rows (one per token id)", tokenIds.length, out.rows());
        ShapeMismatchException.require("embedding", "out", "cols (embedding width)", table.cols(), out.cols());
        OpShapes.requireIds(tokenIds, table.rows());
        if (tokenIds.length == 0) {
            return;
        }
        requireF32("embedding", "out", out);
        DeviceBuffer ids = uploadInts(tokenIds);
        String kernel = switch (table.dtype()) {
            case BF16 -> "gl_embedding_bf16";
            case F16 -> "gl_embedding_f16";
            default -> "gl_embedding";
        };
        kernels.launch(stream, kernel, tokenIds.length, BLOCK, 0,
                Pointer.to(table.pointer()), Pointer.to(ids.pointer()), Pointer.to(out.pointer()),
                Pointer.to(new int[] {tokenIds.length}), Pointer.to(new int[] {table.cols()}));
        releaseAfterEnqueuedWork(ids, "embedding ids");
    }

    @Override
    public void rmsNorm(GpuMatrix x, GpuMatrix weight, float eps, GpuMatrix out) {
        rmsNorm(x, weight, eps, 0f, out);
    }

    @Override
    public void rmsNorm(GpuMatrix x, GpuMatrix weight, float eps, float weightOffset, GpuMatrix out) {
        OpShapes.requireVector("rmsNorm", "weight", x.cols(), weight.rows(), weight.cols());
        OpShapes.requireSame("rmsNorm", "out", x.rows(), x.cols(), out.rows(), out.cols());
        requireF32("rmsNorm", "weight", weight);
        if (x.rows() == 0) {
            return;
        }
        kernels.launch(stream, "gl_rms_norm", x.rows(), BLOCK, 0,
                Pointer.to(x.pointer()), Pointer.to(weight.pointer()), Pointer.to(out.pointer()),
                Pointer.to(new int[] {x.rows()}), Pointer.to(new int[] {x.cols()}), Pointer.to(new float[] {eps}),
                Pointer.to(new float[] {weightOffset}));
    }

    @Override
    public void linear(GpuMatrix x, GpuMatrix weight, GpuMatrix out) {
        int n = x.rows();
        int k = x.cols();
        int m = weight.rows();
        OpShapes.requireLinear(n, k, m, weight.cols(), out.rows(), out.cols());
        requireF32("linear", "x", x);
        requireF32("linear", "out", out);
        if (n == 0 || m == 0) {
            return;
        }
        if (weight.dtype() != DType.F32) {
            linearSixteenBit(x, weight, out);
            return;
        }
        device.makeCurrent();
        FloatPointer w = JavaCppAddresses.floats(weight.pointer());
        FloatPointer in = JavaCppAddresses.floats(x.pointer());
        FloatPointer result = JavaCppAddresses.floats(out.pointer());
        if (n == 1) {
            // Column-major, the row-major weight m x k is a k x m matrix W'; out = W'^T x.
            checkBlas(cublas.cublasSgemv_v2(blas, cublas.CUBLAS_OP_T, k, m, one, w, k, in, 1, zero, result, 1), "cublasSgemv");
        } else {
            // Row-major out (n x m) is column-major out' (m x n) = W'^T (m x k) . x' (k x n).
            checkBlas(cublas.cublasSgemm_v2(blas, cublas.CUBLAS_OP_T, cublas.CUBLAS_OP_N, m, n, k, one, w, k, in, k, zero, result, m),
                    "cublasSgemm");
        }
    }

    /**
     * {@code out = x · weightᵀ} over a BF16 or F16 weight held as stored: {@code x} is rounded to the weight's type into
     * scratch on this stream (freed behind the GEMM), then {@code cublasGemmEx} multiplies the 16-bit operands with F32
     * accumulation into the F32 {@code out}, so the weight is read once at half the bytes of F32.
     */
    private void linearSixteenBit(GpuMatrix x, GpuMatrix weight, GpuMatrix out) {
        int n = x.rows();
        int k = x.cols();
        int m = weight.rows();
        boolean bf16 = weight.dtype() == DType.BF16;
        DeviceBuffer input = DeviceBuffer.allocate(stream, x.elements() * 2L);
        try {
            kernels.launch(stream, bf16 ? "gl_f32_to_bf16" : "gl_f32_to_f16", LaunchGeometry.elementwiseGrid(x.elements(), BLOCK), BLOCK, 0,
                    Pointer.to(x.pointer()), Pointer.to(input.pointer()), Pointer.to(new long[] {x.elements()}));
            device.makeCurrent();
            int type = bf16 ? org.bytedeco.cuda.global.cudart.CUDA_R_16BF : org.bytedeco.cuda.global.cudart.CUDA_R_16F;
            // Row-major out (n x m) is column-major out' (m x n) = W'^T (m x k) . x' (k x n), as for SGEMM.
            checkBlas(cublas.cublasGemmEx(blas, cublas.CUBLAS_OP_T, cublas.CUBLAS_OP_N, m, n, k, one,
                    JavaCppAddresses.at(weight.pointer(), 0), type, k, JavaCppAddresses.at(input.pointer(), 0), type, k, zero,
                    JavaCppAddresses.at(out.pointer(), 0), org.bytedeco.cuda.global.cudart.CUDA_R_32F, m,
                    cublas.CUBLAS_COMPUTE_32F, cublas.CUBLAS_GEMM_DEFAULT), "cublasGemmEx");
        } finally {
            releaseAfterEnqueuedWork(input, "linear 16-bit input");
        }
    }

    /** Refuses a 16-bit matrix where an operation reads or writes F32 only (activations, norms, biases). */
    private static void requireF32(String op, String operand, GpuMatrix m) {
        if (m.dtype() != DType.F32) {
            throw new ShapeMismatchException(op, operand, "F32", m.dtype() + " (" + m + ")");
        }
    }

    @Override
    public void addBias(GpuMatrix x, GpuMatrix bias) {
        OpShapes.requireVector("addBias", "bias", x.cols(), bias.rows(), bias.cols());
        requireF32("addBias", "bias", bias);
        if (x.elements() == 0) {
            return;
        }
        kernels.launch(stream, "gl_add_bias", LaunchGeometry.elementwiseGrid(x.elements(), BLOCK), BLOCK, 0,
                Pointer.to(x.pointer()), Pointer.to(bias.pointer()), Pointer.to(new int[] {x.rows()}), Pointer.to(new int[] {x.cols()}));
    }

    @Override
    public void rope(GpuMatrix x, int[] positions, int headDim, RotaryTable table) {
        OpShapes.requireRope(x.cols(), headDim, table.rotaryDim());
        ShapeMismatchException.require("rope", "positions", "length (rows of x)", x.rows(), positions.length);
        if (x.elements() == 0) {
            return;
        }
        DeviceBuffer pos = uploadInts(positions);
        DeviceBuffer frequencies = uploadFloats(table.frequenciesF32());
        long pairs = (long) x.rows() * (x.cols() / headDim) * (table.rotaryDim() / 2);
        kernels.launch(stream, "gl_rope", LaunchGeometry.elementwiseGrid(pairs, BLOCK), BLOCK, 0,
                Pointer.to(x.pointer()), Pointer.to(pos.pointer()), Pointer.to(frequencies.pointer()),
                Pointer.to(new int[] {x.rows()}), Pointer.to(new int[] {x.cols()}), Pointer.to(new int[] {headDim}),
                Pointer.to(new int[] {table.rotaryDim()}), Pointer.to(new float[] {(float) table.attentionScaling()}));
        releaseAfterEnqueuedWork(pos, "rope positions");
        releaseAfterEnqueuedWork(frequencies, "rope frequencies");
    }

    @Override
    public void rmsNormHeads(GpuMatrix x, GpuMatrix weight, float eps, int headDim) {
        rmsNormHeads(x, weight, eps, headDim, 0f);
    }

    @Override
    public void rmsNormHeads(GpuMatrix x, GpuMatrix weight, float eps, int headDim, float weightOffset) {
        OpShapes.requireRope(x.cols(), headDim, headDim);
        OpShapes.requireVector("rmsNormHeads", "weight", headDim, weight.rows(), weight.cols());
        requireF32("rmsNormHeads", "weight", weight);
        if (x.elements() == 0) {
            return;
        }
        // the heads are contiguous: the row kernel over rows x heads rows of headDim, in place
        int heads = Math.multiplyExact(x.rows(), x.cols() / headDim);
        kernels.launch(stream, "gl_rms_norm", heads, BLOCK, 0,
                Pointer.to(x.pointer()), Pointer.to(weight.pointer()), Pointer.to(x.pointer()), Pointer.to(new int[] {heads}),
                Pointer.to(new int[] {headDim}), Pointer.to(new float[] {eps}), Pointer.to(new float[] {weightOffset}));
    }

    @Override
    public void attention(GpuMatrix q, GpuMatrix keys, GpuMatrix values, int[] positions, int headCount, int kvHeadCount, int headDim,
                          int window, GpuMatrix out) {
        attention(q, keys, values, positions, headCount, kvHeadCount, headDim, window, NeuralOps.plainAttentionScale(headDim), 0f, out);
    }

    @Override
    public void attention(GpuMatrix q, GpuMatrix keys, GpuMatrix values, int[] positions, int headCount, int kvHeadCount, int headDim,
                          int window, float scale, float softcap, GpuMatrix out) {
        if (!(scale > 0) || Float.isInfinite(scale) || !(softcap >= 0) || Float.isInfinite(softcap)) {
            throw new IllegalArgumentException("attention: score scale must be positive and soft cap 0 or positive, got " + scale
                    + " and " + softcap);
        }
        OpShapes.requireAttention(q.rows(), q.cols(), keys.rows(), keys.cols(), values.rows(), values.cols(),
                positions, headCount, kvHeadCount, headDim, out.rows(), out.cols());
        int span = OpShapes.attentionSpan(positions, window);
        if (q.rows() == 0) {
            return;
        }
        // scores of the window's positions only: a sliding window bounds the shared memory, however long the sequence
        int shared = LaunchGeometry.attentionSharedBytes(span - 1, DEFAULT_SHARED_LIMIT);
        DeviceBuffer pos = uploadInts(positions);
        kernels.launch(stream, "gl_attention", q.rows() * headCount, BLOCK, shared,
                Pointer.to(q.pointer()), Pointer.to(keys.pointer()), Pointer.to(values.pointer()), Pointer.to(pos.pointer()),
                Pointer.to(out.pointer()), Pointer.to(new int[] {q.rows()}), Pointer.to(new int[] {headCount}),
                Pointer.to(new int[] {kvHeadCount}), Pointer.to(new int[] {headDim}),
                Pointer.to(new float[] {scale}), Pointer.to(new int[] {window}), Pointer.to(new float[] {softcap}));
        releaseAfterEnqueuedWork(pos, "attention positions");
    }

    @Override
    public void scale(GpuMatrix x, float factor) {
        if (x.elements() == 0 || factor == 1f) {
            return;
        }
        kernels.launch(stream, "gl_scale", LaunchGeometry.elementwiseGrid(x.elements(), BLOCK), BLOCK, 0,
                Pointer.to(x.pointer()), Pointer.to(new float[] {factor}), Pointer.to(new long[] {x.elements()}));
    }

    @Override
    public void softcap(GpuMatrix x, float cap) {
        if (!(cap > 0) || Float.isInfinite(cap)) {
            throw new IllegalArgumentException("softcap: cap must be a positive finite number, got " + cap);
        }
        if (x.elements() == 0) {
            return;
        }
        kernels.launch(stream, "gl_softcap", LaunchGeometry.elementwiseGrid(x.elements(), BLOCK), BLOCK, 0,
                Pointer.to(x.pointer()), Pointer.to(new float[] {cap}), Pointer.to(new long[] {x.elements()}));
    }

    @Override
    public void siluMul(GpuMatrix gate, GpuMatrix up, GpuMatrix out) {
        OpShapes.requireSame("siluMul", "up", gate.rows(), gate.cols(), up.rows(), up.cols());
        OpShapes.requireSame("siluMul", "out", gate.rows(), gate.cols(), out.rows(), out.cols());
        elementwise("gl_silu_mul", gate, up, out);
    }

    @Override
    public void gatedMul(GpuMatrix gate, GpuMatrix up, GpuMatrix out, GateActivation activation) {
        OpShapes.requireSame("gatedMul", "up", gate.rows(), gate.cols(), up.rows(), up.cols());
        OpShapes.requireSame("gatedMul", "out", gate.rows(), gate.cols(), out.rows(), out.cols());
        elementwise(switch (activation) {
            case SILU -> "gl_silu_mul";
            case GELU -> "gl_gelu_mul";
            case GELU_TANH -> "gl_gelu_tanh_mul";
        }, gate, up, out);
    }

    @Override
    public void add(GpuMatrix a, GpuMatrix b, GpuMatrix out) {
        OpShapes.requireSame("add", "b", a.rows(), a.cols(), b.rows(), b.cols());
        OpShapes.requireSame("add", "out", a.rows(), a.cols(), out.rows(), out.cols());
        elementwise("gl_add", a, b, out);
    }

    @Override
    public void softmax(GpuMatrix x) {
        if (x.elements() == 0) {
            return;
        }
        kernels.launch(stream, "gl_softmax_rows", x.rows(), BLOCK, 0,
                Pointer.to(x.pointer()), Pointer.to(new int[] {x.rows()}), Pointer.to(new int[] {x.cols()}));
    }

    @Override
    public int[] argmax(GpuMatrix x) {
        int[] result = new int[x.rows()];
        if (x.rows() == 0) {
            return result;
        }
        DeviceBuffer out = DeviceBuffer.allocate(stream, (long) x.rows() * Integer.BYTES);
        try {
            kernels.launch(stream, "gl_argmax_rows", x.rows(), BLOCK, 0,
                    Pointer.to(x.pointer()), Pointer.to(out.pointer()), Pointer.to(new int[] {x.rows()}), Pointer.to(new int[] {x.cols()}));
            stream.synchronize();
            check(JCudaDriver.cuMemcpyDtoH(Pointer.to(result), out.pointer(), (long) result.length * Integer.BYTES), "cuMemcpyDtoH");
        } finally {
            out.close(); // the stream was synchronized: nothing reads it any more
        }
        return result;
    }

    /**
     * Starts an asynchronous copy of {@code tensor} into pinned host memory leased from the device's pool on this lane's
     * stream; its values are readable at the exact completion of the lane work that issued it. Closing the copy returns
     * the buffer to the pool after everything enqueued on the stream so far (a copy closed unread, after a failed step,
     * returns it safely); no pinned memory is allocated or freed per step once the pool holds a buffer of the size.
     */
    @Override
    public HostCopy copyToHost(GpuMatrix tensor) {
        requireF32("copyToHost", "tensor", tensor);
        long bytes = tensor.elements() * Float.BYTES;
        HostBufferPool<PinnedBuffer>.Lease lease = device.pinnedPool().acquire(bytes);
        if (bytes > 0) {
            try {
                device.makeCurrent();
                check(JCudaDriver.cuMemcpyDtoHAsync(lease.buffer().pointer(), tensor.pointer(), bytes, stream.cuStream()),
                        "cuMemcpyDtoHAsync");
            } catch (RuntimeException e) {
                lease.close(); // nothing was enqueued that writes it
                throw e;
            }
        }
        return new PinnedHostCopy(lease, tensor.rows(), tensor.cols());
    }

    /** Destroys the cuBLAS handle once the work enqueued so far has finished (or the lane's stream has drained). */
    public void close() {
        stream.synchronize();
        device.makeCurrent();
        checkBlas(cublas.cublasDestroy_v2(blas), "cublasDestroy");
        one.close();
        zero.close();
    }

    /** Logits (or any tensor) copied into pinned memory by {@link #copyToHost}. */
    private final class PinnedHostCopy implements HostCopy {
        private final HostBufferPool<PinnedBuffer>.Lease pinned;
        private final int rows;
        private final int cols;
        private final java.util.concurrent.atomic.AtomicBoolean closed = new java.util.concurrent.atomic.AtomicBoolean();

        PinnedHostCopy(HostBufferPool<PinnedBuffer>.Lease pinned, int rows, int cols) {
            this.pinned = pinned;
            this.rows = rows;
            this.cols = cols;
        }

        @Override
        public boolean readableNow() {
            return false;
        }

        @Override
        public int rows() {
            return rows;
        }

        @Override
        public int cols() {
            return cols;
        }

        @Override
        public float[] values() {
            if (closed.get()) {
                throw new IllegalStateException("the host copy of a " + rows + " x " + cols + " tensor of " + stream.name() + " was closed");
            }
            float[] out = new float[Math.multiplyExact(rows, cols)];
            pinned.buffer().buffer().asFloatBuffer().get(out);
            return out;
        }

        @Override
        public void close() {
            if (closed.compareAndSet(false, true)) {
                releaseAfterEnqueuedWork(pinned, "host copy");
            }
        }
    }

    private void elementwise(String kernel, GpuMatrix a, GpuMatrix b, GpuMatrix out) {
        requireF32(kernel, "a", a);
        requireF32(kernel, "b", b);
        requireF32(kernel, "out", out);
        if (a.elements() == 0) {
            return;
        }
        kernels.launch(stream, kernel, LaunchGeometry.elementwiseGrid(a.elements(), BLOCK), BLOCK, 0,
                Pointer.to(a.pointer()), Pointer.to(b.pointer()), Pointer.to(out.pointer()), Pointer.to(new long[] {a.elements()}));
    }

    private GpuMatrix newMatrix(int rows, int cols) {
        if (rows < 0 || cols < 0) {
            throw new ShapeMismatchException("allocate", "shape", "non-negative rows and cols", rows + " x " + cols);
        }
        return new GpuMatrix(DeviceBuffer.allocate(stream, (long) rows * cols * Float.BYTES), 0, rows, cols, false);
    }

    private DeviceBuffer uploadFloats(float[] values) {
        DeviceBuffer buffer = DeviceBuffer.allocate(stream, (long) values.length * Float.BYTES);
        uploadOnStream(buffer.pointer(), Pointer.to(values), (long) values.length * Float.BYTES);
        return buffer;
    }

    private DeviceBuffer uploadInts(int[] values) {
        DeviceBuffer buffer = DeviceBuffer.allocate(stream, (long) values.length * Integer.BYTES);
        uploadOnStream(buffer.pointer(), Pointer.to(values), (long) values.length * Integer.BYTES);
        return buffer;
    }

    /**
     * Copies host values to the device in this lane's order. A synchronous cuMemcpyHtoD from pageable memory may
     * return before its DMA has landed and is not ordered with a non-blocking stream; the asynchronous copy on the
     * stream is, and from pageable memory the driver stages the source before returning, so the array is free then.
     */
    private void uploadOnStream(jcuda.driver.CUdeviceptr destination, Pointer source, long bytes) {
        if (bytes == 0) {
            return;
        }
        device.makeCurrent();
        check(JCudaDriver.cuMemcpyHtoDAsync(destination, source, bytes, stream.cuStream()), "cuMemcpyHtoDAsync");
    }

    private void releaseAfterEnqueuedWork(AutoCloseable value, String what) {
        stream.releaseAfterEnqueuedWork(what, value);
    }

    private void check(int result, String call) {
        if (result != CUresult.CUDA_SUCCESS) {
            throw new GraphlaneException(call + " failed on " + stream.name() + ": " + CUresult.stringFor(result) + " (" + result + ")");
        }
    }

    private void checkBlas(int status, String call) {
        if (status != cublas.CUBLAS_STATUS_SUCCESS) {
            BytePointer name = cublas.cublasGetStatusString(status);
            throw new GraphlaneException(call + " failed on " + stream.name() + ": " + (name == null ? "cuBLAS status" : name.getString())
                    + " (" + status + ")");
        }
    }
}
