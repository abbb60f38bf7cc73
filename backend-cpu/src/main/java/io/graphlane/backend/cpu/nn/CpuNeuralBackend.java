package io.graphlane.backend.cpu.nn;

import io.graphlane.backend.cpu.CpuExecutor;
import io.graphlane.core.GraphlaneException;
import io.graphlane.core.nn.NeuralBackend;
import io.graphlane.core.nn.NeuralOps;
import java.util.Map;
import org.bytedeco.javacpp.Loader;
import org.bytedeco.openblas.global.openblas_nolapack;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;

/** The CPU neural backend: one {@link CpuNeuralOps} (with its own scratch space) per lane. */
public final class CpuNeuralBackend implements NeuralBackend<CpuExecutor, CpuTensor> {
    private final Map<CpuExecutor, CpuNeuralOps> perLane = new ConcurrentHashMap<>();

    /** A backend with no lanes seen yet. */
    public CpuNeuralBackend() {
    }

    /**
     * Sets the number of threads OpenBLAS uses for one call, process-wide (its default is one per
     * core, or {@code OPENBLAS_NUM_THREADS}), and the threads of one packed-weight projection
     * ({@link PackedMatrix}) with it. With several lanes calling OpenBLAS at once, 1 avoids
     * its idle threads spinning against the other lanes' workers.
     *
     * @throws IllegalArgumentException if {@code threads} is less than 1
     */
    public static void setBlasThreads(int threads) {
        if (threads < 1) {
            throw new IllegalArgumentException("OpenBLAS threads must be >= 1, got " + threads);
        }
        Loader.load(openblas_nolapack.class);
        openblas_nolapack.blas_set_num_threads(threads);
        RowParallel.setThreads(threads);
    }

    /** The cores this process shares among its lanes, when fewer than the machine's ({@link #shareCores}); 0: every one. */
    private static volatile int coresShare;

    /**
     * Lets the lanes of this process use {@code cores} cores (at most the machine's) when choosing threads per call, for
     * a process that shares its host with others doing the same work: several cluster nodes on one host, for example.
     *
     * @throws IllegalArgumentException if {@code cores} is less than 1
     */
    public static void shareCores(int cores) {
        if (cores < 1) {
            throw new IllegalArgumentException("cores must be >= 1, got " + cores);
        }
        coresShare = cores;
    }

    /** The cores this process's lanes share: {@link Runtime#availableProcessors}, or fewer as {@link #shareCores} set. */
    public static int cores() {
        int available = Runtime.getRuntime().availableProcessors();
        int share = coresShare;
        return share > 0 ? Math.min(share, available) : available;
    }

    /** The system property that fixes OpenBLAS's threads per call, overriding {@link #blasThreadsFor}'s choice. */
    public static final String BLAS_THREADS_PROPERTY = "graphlane.cpu.blas-threads";

    /**
     * The OpenBLAS threads per call for {@code lanes} lanes that call it at the same time on {@code cores} cores:
     * the cores shared evenly ({@code max(1, cores / lanes)}), so a lone stage uses every core and many stages
     * never oversubscribe them; {@code override} (from {@value #BLAS_THREADS_PROPERTY}) wins when positive.
     *
     * @throws IllegalArgumentException if {@code lanes} or {@code cores} is less than 1
     */
    public static int blasThreadsFor(int lanes, int cores, int override) {
        if (lanes < 1 || cores < 1) {
            throw new IllegalArgumentException("lanes and cores must be >= 1, got " + lanes + " and " + cores);
        }
        return override > 0 ? override : Math.max(1, cores / lanes);
    }

    /**
     * The override of {@value #BLAS_THREADS_PROPERTY}: a positive integer, or 0 when the property is unset or {@code auto}.
     *
     * @throws GraphlaneException naming the property and the value when it is neither
     */
    public static int blasThreadsOverride() {
        String value = System.getProperty(BLAS_THREADS_PROPERTY, "auto").trim();
        if (value.equals("auto")) {
            return 0;
        }
        try {
            int threads = Integer.parseInt(value);
            if (threads >= 1) {
                return threads;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw new GraphlaneException("-D" + BLAS_THREADS_PROPERTY + " must be auto or a whole number >= 1, found '" + value + "'");
    }

    /** The system property that fixes the SIMD kernels' vector width in bits: {@code auto} (default), 256 or 512. */
    public static final String VECTOR_BITS_PROPERTY = "graphlane.cpu.vector-bits";

    /**
     * The SIMD kernels' vector width for the property value {@code value} ({@value #VECTOR_BITS_PROPERTY}; null or
     * {@code auto}: 512 when the JVM's {@code preferred} width is at least that, as on AVX-512, else 256).
     *
     * @param strict whether a value other than auto, 256 and 512 is refused; otherwise it counts as auto (the kernels'
     *               class initializer, which must not fail: {@link #checkVectorBits} refuses it at pipeline start)
     * @throws GraphlaneException naming the property and the value, when {@code strict} and it is none of those
     */
    public static int vectorBits(String value, int preferred, boolean strict) {
        String v = value == null ? "auto" : value.trim();
        if (v.equals("256") || v.equals("512")) {
            return Integer.parseInt(v);
        }
        if (strict && !v.equals("auto")) {
            throw new GraphlaneException("-D" + VECTOR_BITS_PROPERTY + " must be auto, 256 or 512, found '" + value + "'");
        }
        return preferred >= 512 ? 512 : 256;
    }

    /**
     * Refuses a {@value #VECTOR_BITS_PROPERTY} other than auto, 256 or 512, naming it and its value.
     *
     * @throws GraphlaneException if the property holds anything else
     */
    public static void checkVectorBits() {
        vectorBits(System.getProperty(VECTOR_BITS_PROPERTY), 256, true);
    }

    /**
     * The wall time, in nanoseconds, that lanes have spent inside the Java kernels' calls since this JVM started, summed over
     * the lanes: every projection on the Java kernels and, with the Vector API, every attention call (a call's helper
     * threads work within its lane's time). The difference over a run, against the run's wall time, is the share of a
     * step the kernels take; the rest is what runs between them (norms, RoPE, sampling, the lanes' messages).
     */
    public static long kernelCallNanos() {
        return RowParallel.callNanos();
    }

    /** The SIMD kernels' vector width in bits, or 0 when the JVM runs without the Vector API (the scalar kernels). */
    public static int simdBits() {
        return PackedKernels.VECTOR ? VectorKernels.BITS : 0;
    }

    /** The thread count last given to {@link #setBlasThreads}, or -1 while OpenBLAS runs with its default. */
    public static int blasThreads() {
        Loader.load(openblas_nolapack.class);
        return openblas_nolapack.blas_get_num_threads();
    }

    @Override
    public NeuralOps<CpuTensor> ops(CpuExecutor executor) {
        Objects.requireNonNull(executor, "executor");
        return perLane.computeIfAbsent(executor, e -> new CpuNeuralOps());
    }
}
