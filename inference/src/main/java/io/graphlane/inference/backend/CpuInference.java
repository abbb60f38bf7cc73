package io.graphlane.inference.backend;

import io.graphlane.actors.lane.WorkTracing;
import io.graphlane.actors.materialize.MaterializationSettings;
import io.graphlane.actors.materialize.MaterializationSupervisor;
import io.graphlane.backend.cpu.CpuBackend;
import io.graphlane.backend.cpu.CpuCompletion;
import io.graphlane.backend.cpu.CpuExecutor;
import io.graphlane.backend.cpu.CpuWork;
import io.graphlane.backend.cpu.nn.CpuNeuralBackend;
import io.graphlane.backend.cpu.nn.CpuTensor;
import io.graphlane.backend.cpu.param.CpuParameter;
import io.graphlane.backend.cpu.param.CpuParameterBackend;
import io.graphlane.backend.cpu.transfer.CpuDevicePool;
import io.graphlane.core.nn.NeuralOps;
import io.graphlane.inference.offload.CpuLayerTier;
import io.graphlane.inference.offload.LayerTier;
import io.graphlane.inference.model.ModelDirectory;
import io.graphlane.inference.stage.StagePlan;
import io.graphlane.inference.stage.StageSpec;
import io.graphlane.inference.tensorparallel.TensorParallelStage;
import io.graphlane.inference.tensorparallel.TensorParallelStages;
import io.graphlane.inference.weights.CpuWeightSlots;
import io.graphlane.inference.weights.WeightSlots;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.function.Consumer;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.Scheduler;

/**
 * The CPU as an {@link InferenceBackend}, the pipeline's default: one {@link CpuBackend} (a worker
 * thread per lane), {@link io.graphlane.backend.cpu.nn.CpuNeuralOps} per lane on OpenBLAS, weights
 * realized by the {@link CpuParameterBackend} (aligned F32 and F16/BF16 in place, kept 16-bit; the loader
 * asks for F32 or 8-bit blocks with recipes), and
 * tensor-parallel stages. OpenBLAS's threads per call are process-wide: opening the backend sets one,
 * and {@link #computeLanes} then shares the cores among the lanes that call it at once (every core for a
 * lone stage, one thread each once the lanes are as many as the cores, so its idle threads never spin
 * against the lanes' workers; the cores are {@link CpuNeuralBackend#cores}, fewer than the machine's where
 * several nodes share a host); {@code -Dgraphlane.cpu.blas-threads=N} fixes the count.
 */
public final class CpuInference implements InferenceBackend<CpuTensor, CpuExecutor, CpuCompletion, CpuWork, CpuParameter> {
    private final CpuBackend backend = new CpuBackend();
    private final CpuNeuralBackend neural = new CpuNeuralBackend();
    private final WorkTracing<CpuWork> tracing;

    /** A CPU backend whose stage work is not instrumented for the trace. */
    public CpuInference() {
        this(WorkTracing.none());
    }

    /** A CPU backend whose stage work is instrumented by {@code tracing}. */
    public CpuInference(WorkTracing<CpuWork> tracing) {
        this.tracing = Objects.requireNonNull(tracing, "tracing");
        CpuNeuralBackend.setBlasThreads(1);
    }

    /** The factory the pipeline uses by default. */
    public static InferenceBackend.Factory factory(WorkTracing<CpuWork> tracing) {
        return () -> new CpuInference(tracing);
    }

    @Override
    public String description() {
        return "cpu";
    }

    @Override
    public CpuBackend device() {
        return backend;
    }

    @Override
    public NeuralOps<CpuTensor> ops(CpuExecutor lane) {
        return neural.ops(lane);
    }

    @Override
    public CpuWork work(Runnable body) {
        return body::run;
    }

    @Override
    public WorkTracing<CpuWork> workTracing() {
        return tracing;
    }

    @Override
    public void computeLanes(int lanes) {
        CpuNeuralBackend.checkVectorBits();
        CpuNeuralBackend.setBlasThreads(CpuNeuralBackend.blasThreadsFor(lanes, CpuNeuralBackend.cores(),
                CpuNeuralBackend.blasThreadsOverride()));
    }

    @Override
    public Behavior<MaterializationSupervisor.Command<CpuParameter>> supervisor(CpuExecutor loadingLane, MaterializationSettings settings) {
        return MaterializationSupervisor.create(CpuParameterBackend.keepingHalfPrecision(backend), loadingLane, settings);
    }

    @Override
    public WeightSlots<CpuParameter, CpuTensor> weightSlots() {
        return new CpuWeightSlots();
    }

    @Override
    public List<TensorParallelStage<CpuTensor>> loadTensorParallel(ActorRef<MaterializationSupervisor.Command<CpuParameter>> supervisor,
                                                                   Scheduler scheduler, Duration timeout, ModelDirectory model,
                                                                   StagePlan plan, int degree, Consumer<StageSpec> progress) {
        return TensorParallelStages.load(supervisor, scheduler, timeout, model, plan, degree, progress);
    }

    /** Promotions into a device pool of host memory, through the CPU's transfer backend. */
    @Override
    public LayerTier<CpuTensor, CpuExecutor, CpuCompletion> layerTier() {
        return new CpuLayerTier(backend, new CpuDevicePool("cpu-device", Long.MAX_VALUE));
    }

    @Override
    public void close() {
        backend.close();
    }
}
