package io.graphlane.backend.gpu.nn;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.graphlane.backend.cpu.nn.CpuNeuralOps;
import io.graphlane.backend.cpu.nn.CpuTensor;
import io.graphlane.backend.gpu.CudaLibraries;
import io.graphlane.backend.gpu.CudaLibrary;
import io.graphlane.backend.gpu.GpuBackend;
import io.graphlane.core.nn.NeuralOps;
import java.util.Random;
import java.util.function.BiConsumer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Every GPU neural op against the CPU implementation on the same random operands. Skipped, with
 * the reason, where the CUDA driver, NVRTC or cuBLAS is missing.
 */
class GpuNeuralOpsDeviceTest {
    private static final float TOLERANCE = 1e-4f;
    private static GpuBackend device;
    private static GpuNeuralBackend neural;
    private static NeuralOps<GpuMatrix> gpu;
    private final CpuNeuralOps cpu = new CpuNeuralOps();
    private final Random random = new Random(42);

    @BeforeEach
    void open() {
        for (CudaLibrary library : new CudaLibrary[] {CudaLibrary.DRIVER, CudaLibrary.NVRTC, CudaLibrary.CUBLAS}) {
            assumeTrue(CudaLibraries.isAvailable(library), () -> "GPU neural ops need " + library.sharedObject() + ": "
                    + CudaLibraries.unavailableReason(library).orElse(""));
        }
        if (device == null) {
            device = GpuBackend.open(Integer.getInteger("graphlane.gpu.test-device", 0));
            neural = GpuNeuralBackend.create(device);
            gpu = neural.ops(device.rootExecutor());
        }
    }

    @AfterAll
    static void close() {
        if (neural != null) {
            neural.close();
        }
        if (device != null) {
            device.close();
        }
    }

    @Test
    void linearMatchesTheCpuForOneRowAndForMany() {
        for (int n : new int[] {1, 7, 33}) {
            float[] x = randoms(n * 96);
            float[] w = randoms(80 * 96);
            GpuMatrix out = gpu.allocate(n, 80);
            gpu.linear(gpu.fromHost(x, n, 96), gpu.fromHost(w, 80, 96), out);
            CpuTensor expected = cpu.allocate(n, 80);
            cpu.linear(cpu.fromHost(x, n, 96), cpu.fromHost(w, 80, 96), expected);
            assertClose(read(cpu, expected), read(gpu, out));
        }
    }

    /**
     * A 16-bit weight held as stored: GemmEx over the input rounded to the weight's type with F32 accumulation matches
     * the CPU's F32 linear over the same rounded operands, and the 16-bit embedding reads the rows the CPU reads.
     */
    @Test
    void linearAndEmbeddingOverSixteenBitWeightsMatchTheCpuOverTheRoundedOperands() {
        java.util.Map<Float, Short> halfOf = new java.util.HashMap<>();
        for (int bits = 0; bits <= 0xffff; bits++) {
            halfOf.putIfAbsent(KernelSources.halfBitsToFloat((short) bits), (short) bits);
        }
        for (io.graphlane.core.tensor.DType dtype : new io.graphlane.core.tensor.DType[] {
                io.graphlane.core.tensor.DType.BF16, io.graphlane.core.tensor.DType.F16}) {
            boolean bf16 = dtype == io.graphlane.core.tensor.DType.BF16;
            for (int n : new int[] {1, 7, 33}) {
                // F16: multiples of 2^-10 in [-1, 1] are exact halves; BF16: the host's rounding mirrors the kernel's
                float[] x = bf16 ? roundedBf16(randoms(n * 96)) : exactHalves(n * 96);
                float[] w = bf16 ? roundedBf16(randoms(80 * 96)) : exactHalves(80 * 96);
                short[] wBits = new short[w.length];
                for (int i = 0; i < w.length; i++) {
                    wBits[i] = bf16 ? KernelSources.floatToBf16Bits(w[i]) : halfOf.get(w[i]);
                }
                io.graphlane.backend.gpu.DeviceBuffer storage = upload(wBits);
                try {
                    GpuMatrix weight = GpuMatrix.borrowed(storage, 80, 96, dtype);
                    GpuMatrix out = gpu.allocate(n, 80);
                    gpu.linear(gpu.fromHost(x, n, 96), weight, out);
                    CpuTensor expected = cpu.allocate(n, 80);
                    cpu.linear(cpu.fromHost(x, n, 96), cpu.fromHost(w, 80, 96), expected);
                    assertClose(read(cpu, expected), read(gpu, out));
                    int[] ids = {3, 0, 79, 3};
                    GpuMatrix rows = gpu.allocate(ids.length, 96);
                    gpu.embedding(weight, ids, rows);
                    CpuTensor cpuRows = cpu.allocate(ids.length, 96);
                    cpu.embedding(cpu.fromHost(w, 80, 96), ids, cpuRows);
                    assertArrayEquals(read(cpu, cpuRows), read(gpu, rows), dtype + " embedding rows are the stored values");
                } finally {
                    device.rootExecutor().synchronize();
                    storage.close();
                }
            }
        }
    }

    private static float[] roundedBf16(float[] values) {
        float[] out = new float[values.length];
        for (int i = 0; i < values.length; i++) {
            out[i] = Float.intBitsToFloat((KernelSources.floatToBf16Bits(values[i]) & 0xffff) << 16);
        }
        return out;
    }

    private float[] exactHalves(int n) {
        float[] out = new float[n];
        for (int i = 0; i < n; i++) {
            out[i] = (random.nextInt(2049) - 1024) / 1024f;
        }
        return out;
    }

    private static io.graphlane.backend.gpu.DeviceBuffer upload(short[] bits) {
        io.graphlane.backend.gpu.DeviceBuffer buffer = io.graphlane.backend.gpu.DeviceBuffer.allocate(device.rootExecutor(), bits.length * 2L);
        device.rootExecutor().synchronize();
        device.makeCurrent();
        int status = jcuda.driver.JCudaDriver.cuMemcpyHtoD(buffer.pointer(), jcuda.Pointer.to(bits), bits.length * 2L);
        assertEquals(jcuda.driver.CUresult.CUDA_SUCCESS, status, "cuMemcpyHtoD");
        return buffer;
    }

    @Test
    void normRopeSiluAddSoftmaxMatchTheCpu() {
        float[] x = randoms(5 * 64);
        float[] w = randoms(64);
        int[] positions = {0, 1, 2, 17, 300};
        compare(5, 64, (ops, t) -> ops.rmsNorm(t.x, t.w, 1e-5f, t.x), x, w);
        compare(5, 64, (ops, t) -> ops.rope(t.x, positions, 16, 10000f), x, w);
        compare(5, 64, (ops, t) -> ops.siluMul(t.x, t.x, t.x), x, w);
        compare(5, 64, (ops, t) -> ops.add(t.x, t.x, t.x), x, w);
        compare(5, 64, (ops, t) -> ops.softmax(t.x), x, w);
        compare(5, 64, (ops, t) -> ops.addBias(t.x, t.w), x, w);
    }

    @Test
    void attentionOverACacheAndArgmaxMatchTheCpu() {
        int heads = 4;
        int kvHeads = 2;
        int headDim = 16;
        int cache = 40;
        float[] q = randoms(3 * heads * headDim);
        float[] k = randoms(cache * kvHeads * headDim);
        float[] v = randoms(cache * kvHeads * headDim);
        int[] positions = {5, 6, 39};
        GpuMatrix gOut = gpu.allocate(3, heads * headDim);
        gpu.attention(gpu.fromHost(q, 3, heads * headDim), gpu.fromHost(k, cache, kvHeads * headDim),
                gpu.fromHost(v, cache, kvHeads * headDim), positions, heads, kvHeads, headDim, gOut);
        CpuTensor cOut = cpu.allocate(3, heads * headDim);
        cpu.attention(cpu.fromHost(q, 3, heads * headDim), cpu.fromHost(k, cache, kvHeads * headDim),
                cpu.fromHost(v, cache, kvHeads * headDim), positions, heads, kvHeads, headDim, cOut);
        assertClose(read(cpu, cOut), read(gpu, gOut));
        assertArrayEquals(cpu.argmax(cOut), gpu.argmax(gOut));
    }

    @Test
    void slidingWindowAttentionMatchesTheCpu() {
        int heads = 4;
        int kvHeads = 2;
        int headDim = 16;
        int cache = 40;
        float[] q = randoms(4 * heads * headDim);
        float[] k = randoms(cache * kvHeads * headDim);
        float[] v = randoms(cache * kvHeads * headDim);
        int[] positions = {0, 2, 3, 39};
        for (int window : new int[] {1, 3, 64}) {
            GpuMatrix gOut = gpu.allocate(4, heads * headDim);
            gpu.attention(gpu.fromHost(q, 4, heads * headDim), gpu.fromHost(k, cache, kvHeads * headDim),
                    gpu.fromHost(v, cache, kvHeads * headDim), positions, heads, kvHeads, headDim, window, gOut);
            CpuTensor cOut = cpu.allocate(4, heads * headDim);
            cpu.attention(cpu.fromHost(q, 4, heads * headDim), cpu.fromHost(k, cache, kvHeads * headDim),
                    cpu.fromHost(v, cache, kvHeads * headDim), positions, heads, kvHeads, headDim, window, cOut);
            assertClose(read(cpu, cOut), read(gpu, gOut));
        }
    }

    @Test
    void gemmasOpsMatchTheCpu() {
        float[] x = randoms(5 * 64);
        float[] w = randoms(64);
        float[] big = new float[x.length];
        for (int i = 0; i < x.length; i++) {
            big[i] = 20 * x[i];
        }
        compare(5, 64, (ops, t) -> ops.rmsNorm(t.x, t.w, 1e-6f, 1f, t.x), x, w);
        compare(5, 64, (ops, t) -> ops.rmsNormHeads(t.x, t.w, 1e-6f, 64, 1f), x, w);
        compare(5, 64, (ops, t) -> ops.scale(t.x, 55.5f), x, w);
        compare(5, 64, (ops, t) -> ops.softcap(t.x, 15f), big, w);
        int heads = 4;
        int kvHeads = 2;
        int headDim = 16;
        int cache = 40;
        float[] q = randoms(4 * heads * headDim);
        float[] k = randoms(cache * kvHeads * headDim);
        float[] v = randoms(cache * kvHeads * headDim);
        int[] positions = {0, 2, 3, 39};
        for (int window : new int[] {3, NeuralOps.NO_WINDOW}) {
            GpuMatrix gOut = gpu.allocate(4, heads * headDim);
            gpu.attention(gpu.fromHost(q, 4, heads * headDim), gpu.fromHost(k, cache, kvHeads * headDim),
                    gpu.fromHost(v, cache, kvHeads * headDim), positions, heads, kvHeads, headDim, window, 0.5f, 2f, gOut);
            CpuTensor cOut = cpu.allocate(4, heads * headDim);
            cpu.attention(cpu.fromHost(q, 4, heads * headDim), cpu.fromHost(k, cache, kvHeads * headDim),
                    cpu.fromHost(v, cache, kvHeads * headDim), positions, heads, kvHeads, headDim, window, 0.5f, 2f, cOut);
            assertClose(read(cpu, cOut), read(gpu, gOut));
        }
    }

    @Test
    void embeddingGathersRowsAndCopyOfASliceWritesThrough() {
        float[] table = randoms(10 * 8);
        GpuMatrix out = gpu.allocate(3, 8);
        gpu.embedding(gpu.fromHost(table, 10, 8), new int[] {9, 0, 4}, out);
        float[] found = read(gpu, out);
        for (int c = 0; c < 8; c++) {
            assertEquals(table[9 * 8 + c], found[c]);
            assertEquals(table[4 * 8 + c], found[16 + c]);
        }
        GpuMatrix target = gpu.allocate(6, 8);
        gpu.copy(out, gpu.rowSlice(target, 2, 5));
        float[] t = read(gpu, target);
        assertEquals(0f, t[0]);
        assertEquals(table[9 * 8], t[16]);
    }

    /** Two operands x (rows × cols) and w (1 × cols) on one backend. */
    private record Operands<T>(T x, T w) {
    }

    private void compare(int rows, int cols, BiConsumer<NeuralOps<Object>, Operands<Object>> op, float[] x, float[] w) {
        assertClose(run(cpu, rows, cols, op, x, w), run(gpu, rows, cols, op, x, w));
    }

    @SuppressWarnings("unchecked")
    private static <T> float[] run(NeuralOps<T> ops, int rows, int cols, BiConsumer<NeuralOps<Object>, Operands<Object>> op, float[] x, float[] w) {
        T tx = ops.fromHost(x, rows, cols);
        T tw = ops.fromHost(w, 1, cols);
        op.accept((NeuralOps<Object>) ops, new Operands<>(tx, tw));
        return read(ops, tx);
    }

    private static <T> float[] read(NeuralOps<T> ops, T t) {
        float[] out = new float[ops.rows(t) * ops.cols(t)];
        ops.toHost(t, out);
        return out;
    }

    private float[] randoms(int n) {
        float[] a = new float[n];
        for (int i = 0; i < n; i++) {
            a[i] = (float) random.nextGaussian();
        }
        return a;
    }

    private static void assertClose(float[] expected, float[] found) {
        assertClose(expected, found, TOLERANCE);
    }

    private static void assertClose(float[] expected, float[] found, float tolerance) {
        assertEquals(expected.length, found.length);
        for (int i = 0; i < expected.length; i++) {
            float scale = Math.max(1f, Math.abs(expected[i]));
            if (Math.abs(expected[i] - found[i]) > tolerance * scale) {
                throw new AssertionError("element " + i + ": expected " + expected[i] + " but GPU gave " + found[i]);
            }
        }
    }
}
