package io.graphlane.backend.cpu.nn;

import io.graphlane.backend.cpu.CpuExecutor;
import io.graphlane.core.nn.NeuralBackend;
import io.graphlane.core.nn.NeuralOps;
import java.util.Map;
import org.bytedeco.javacpp.Loader;
import org.bytedeco.openblas.global.openblas;
import org.bytedeco.openblas.presets.openblas_nolapack;
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
     * core, or {@code OPENBLAS_NUM_THREADS}). With several lanes calling OpenBLAS at once, 1 avoids
     * its idle threads spinning against the other lanes' workers.
     *
     * @throws IllegalArgumentException if {@code threads} is less than 1
     */
    public static void setBlasThreads(int threads) {
        if (threads < 1) {
            throw new IllegalArgumentException("OpenBLAS threads must be >= 1, got " + threads);
        }
        Loader.load(openblas.class);
        openblas_nolapack.blas_set_num_threads(threads);
    }

    /** The thread count last given to {@link #setBlasThreads}, or -1 while OpenBLAS runs with its default. */
    public static int blasThreads() {
        Loader.load(openblas.class);
        return openblas_nolapack.blas_get_num_threads();
    }

    @Override
    public NeuralOps<CpuTensor> ops(CpuExecutor executor) {
        Objects.requireNonNull(executor, "executor");
        return perLane.computeIfAbsent(executor, e -> new CpuNeuralOps());
    }
}
