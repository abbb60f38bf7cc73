package io.graphlane.backend.cpu.nn;

import io.graphlane.backend.cpu.CpuExecutor;
import io.graphlane.core.nn.NeuralBackend;
import io.graphlane.core.nn.NeuralOps;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;

/** The CPU neural backend: one {@link CpuNeuralOps} (with its own scratch space) per lane. */
public final class CpuNeuralBackend implements NeuralBackend<CpuExecutor, CpuTensor> {
    private final Map<CpuExecutor, CpuNeuralOps> perLane = new ConcurrentHashMap<>();

    /** A backend with no lanes seen yet. */
    public CpuNeuralBackend() {
    }

    @Override
    public NeuralOps<CpuTensor> ops(CpuExecutor executor) {
        Objects.requireNonNull(executor, "executor");
        return perLane.computeIfAbsent(executor, e -> new CpuNeuralOps());
    }
}
