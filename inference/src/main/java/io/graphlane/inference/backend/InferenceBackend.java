package io.graphlane.inference.backend;

import io.graphlane.actors.lane.WorkTracing;
import io.graphlane.actors.materialize.MaterializationSettings;
import io.graphlane.actors.materialize.MaterializationSupervisor;
import io.graphlane.core.GraphlaneException;
import io.graphlane.core.backend.SubmissionBackend;
import io.graphlane.core.completion.Completion;
import io.graphlane.core.nn.NeuralOps;
import io.graphlane.inference.model.ModelDirectory;
import io.graphlane.inference.offload.LayerTier;
import io.graphlane.inference.stage.StagePlan;
import io.graphlane.inference.stage.StageSpec;
import io.graphlane.inference.tensorparallel.TensorParallelStage;
import io.graphlane.inference.weights.WeightSlots;
import java.time.Duration;
import java.util.List;
import java.util.function.Consumer;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.Scheduler;

/**
 * One device as the embedded pipeline ({@code InferencePipeline}) uses it: the submission backend its
 * lanes are forked from, the neural ops each lane issues, how a stage's body becomes the lane's work,
 * the parameter backend behind the materialization supervisor and the slots it binds. The pipeline
 * owns the instance it opened and closes it last, after its lanes stopped and its weights were closed.
 *
 * <p>Implementations: {@link CpuInference} (the default) and, with {@code graphlane-backend-gpu} on the
 * class path, {@code io.graphlane.inference.gpu.GpuInference}.
 *
 * @param <T> the backend tensor
 * @param <E> the executor (a lane)
 * @param <C> the completion
 * @param <W> backend-native work
 * @param <P> the parameter slot
 */
public interface InferenceBackend<T, E, C extends Completion, W, P> extends AutoCloseable {

    /** Opens a backend; what {@code InferencePipeline.Builder#backend} takes, so the build opens and owns it. */
    @FunctionalInterface
    interface Factory {
        /**
         * Opens the device.
         *
         * @throws GraphlaneException naming what is missing when the device cannot be used here
         */
        InferenceBackend<?, ?, ?, ?, ?> open();
    }

    /** A short name for messages and summaries ({@code cpu}, {@code cuda0 (NVIDIA H200)}). */
    String description();

    /** The device every lane (stage lanes, the loading lane) is forked from. */
    SubmissionBackend<E, C, W> device();

    /** The operations stage code issues on {@code lane}; call them only from work running on that lane. */
    NeuralOps<T> ops(E lane);

    /**
     * The work item that runs {@code body} on its lane: on the CPU the body runs on the lane's worker; on a
     * device it runs while the work is submitted and only enqueues on the lane's stream.
     */
    W work(Runnable body);

    /** How stage work is instrumented for the trace (default: shown starting when submitted). */
    default WorkTracing<W> workTracing() {
        return WorkTracing.none();
    }

    /**
     * Told once, before the stage lanes start, how many compute lanes (stage lanes and tensor-parallel shard lanes)
     * will issue ops at the same time, so a backend can size the parallelism of one op by it (the CPU shares its cores
     * among them). Nothing by default.
     */
    default void computeLanes(int lanes) {
    }

    /** The materialization supervisor over this backend's parameter backend, realizing weights on {@code loadingLane}. */
    Behavior<MaterializationSupervisor.Command<P>> supervisor(E loadingLane, MaterializationSettings settings);

    /** The parameter slots the supervisor binds, and the tensors over them. */
    WeightSlots<P, T> weightSlots();

    /**
     * Every stage of {@code plan} split over {@code degree} tensor-parallel shards, whose works run on the pipeline's
     * shard lanes (one lane per rank); each shard's weights load as one atomic unit of {@code supervisor} (the
     * supervisor over {@link #supervisor}), each waited for at most {@code timeout}, and are released by the stage's
     * close. Refused by default: only the CPU backend runs tensor-parallel shards.
     *
     * @throws GraphlaneException naming the option and what to use instead
     */
    default List<TensorParallelStage<T>> loadTensorParallel(ActorRef<MaterializationSupervisor.Command<P>> supervisor,
                                                            Scheduler scheduler, Duration timeout, ModelDirectory model,
                                                            StagePlan plan, int degree, Consumer<StageSpec> progress) {
        throw new GraphlaneException("--tensor-parallel " + degree + " is not supported on " + description()
                + ": tensor-parallel shards run on CPU lanes only; use --backend cpu or --tensor-parallel 1");
    }

    /**
     * How this device promotes a decoder layer from host memory ({@code --device-weights-budget}); the loaded weights of
     * a streamed layer are its host copy. Refused by default.
     *
     * @throws GraphlaneException naming the option and what to use instead
     */
    default LayerTier<T, E, C> layerTier() {
        throw new GraphlaneException("--device-weights-budget is not supported on " + description()
                + ": layers are streamed from host memory on CPU lanes only so far; use --backend cpu, or leave the option out");
    }

    /**
     * The bytes the KV caches may still take on this device now (called once the weights are bound and the lanes are
     * up): by default the host's, as {@link CacheMemory#hostFree()} reads them, where the CPU's caches live.
     */
    default long freeCacheMemory() {
        return CacheMemory.hostFree();
    }

    /** Frees the device and what this instance opened on it; call after the lanes stopped and the weights were closed. Idempotent. */
    @Override
    void close();
}
