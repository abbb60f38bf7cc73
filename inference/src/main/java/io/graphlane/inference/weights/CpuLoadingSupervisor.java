package io.graphlane.inference.weights;

import io.graphlane.actors.materialize.MaterializationSettings;
import io.graphlane.actors.materialize.MaterializationSupervisor;
import io.graphlane.backend.cpu.CpuBackend;
import io.graphlane.backend.cpu.CpuExecutor;
import io.graphlane.backend.cpu.param.CpuParameter;
import io.graphlane.backend.cpu.param.CpuParameterBackend;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Scheduler;
import org.apache.pekko.actor.typed.javadsl.Behaviors;

/**
 * The materialization supervisor of a CPU load made by a caller with no actor system of its own (the logits command,
 * tests): the same supervisor the pipeline's CPU backend starts ({@link CpuParameterBackend#keepingHalfPrecision}, so
 * aligned F32 and F16/BF16 weights are used in place, kept in the checkpoint's dtype unless a {@link WeightFormat}
 * asks for a recipe; its settings read from {@code graphlane.materialization.*}), on a loading lane of its own. It
 * runs for one load and is stopped once that is done; what the load bound stays bound until its loader releases it.
 */
public final class CpuLoadingSupervisor {
    /** How long one unit (a stage, a shard) may take to load. */
    public static final Duration DEFAULT_LOAD_TIMEOUT = Duration.ofMinutes(10);

    /** A load run against a supervisor. */
    @FunctionalInterface
    public interface Load<R> {
        /** Loads through {@code supervisor}, timing waits with {@code scheduler}. */
        R load(ActorRef<MaterializationSupervisor.Command<CpuParameter>> supervisor, Scheduler scheduler);
    }

    private CpuLoadingSupervisor() {
    }

    /**
     * Starts a supervisor named {@code name} (an actor system name: letters, digits, '-'), runs {@code load} against it
     * on the calling thread and stops the supervisor and its loading lane again, whether the load returned or threw.
     */
    public static <R> R run(String name, Load<R> load) {
        try (CpuBackend device = new CpuBackend(name)) {
            CpuExecutor loadingLane = device.forkExecutors(device.rootExecutor(), 1).get(0);
            ActorSystem<MaterializationSupervisor.Command<CpuParameter>> system = ActorSystem.create(
                    Behaviors.setup(ctx -> MaterializationSupervisor.create(CpuParameterBackend.keepingHalfPrecision(device), loadingLane,
                            MaterializationSettings.fromConfig(ctx.getSystem().settings().config()))), name);
            try {
                return load.load(system, system.scheduler());
            } finally {
                system.terminate();
                try {
                    system.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                } catch (Exception e) {
                    // the weights are bound already; a slow shutdown of the loading actors changes nothing for them
                }
            }
        }
    }
}
