package io.graphlane.inference.pipeline;

import io.graphlane.actors.lane.WorkTracing;
import io.graphlane.actors.materialize.MaterializationSettings;
import io.graphlane.actors.materialize.MaterializationSupervisor;
import io.graphlane.actors.materialize.UnitReply;
import io.graphlane.backend.cpu.CpuBackend;
import io.graphlane.backend.cpu.CpuCompletion;
import io.graphlane.backend.cpu.CpuExecutor;
import io.graphlane.backend.cpu.CpuWork;
import io.graphlane.backend.cpu.nn.CpuTensor;
import io.graphlane.backend.cpu.param.CpuParameter;
import io.graphlane.core.nn.NeuralOps;
import io.graphlane.inference.backend.CpuInference;
import io.graphlane.inference.backend.InferenceBackend;
import io.graphlane.inference.llama.LlamaTensors.Expected;
import io.graphlane.inference.weights.WeightSlots;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.BehaviorInterceptor;
import org.apache.pekko.actor.typed.TypedActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;

/**
 * The CPU backend with its materialization supervisor's answers held back: every unit's answer goes to
 * {@code held} instead of the loader, and {@link #release} hands it on when the test says so. Counts
 * how often each weight slot is closed, so a test sees the late answer's weights closed exactly once.
 */
final class HeldAnswerCpuInference implements InferenceBackend<CpuTensor, CpuExecutor, CpuCompletion, CpuWork, CpuParameter> {
    private final CpuInference cpu = new CpuInference(WorkTracing.none());
    private final ActorRef<UnitReply> held;
    private final List<ActorRef<UnitReply>> loaders = new ArrayList<>();
    private final Map<CpuParameter, Integer> closes = new IdentityHashMap<>();
    private final CompletableFuture<Void> everySlotClosed = new CompletableFuture<>();

    HeldAnswerCpuInference(ActorRef<UnitReply> held) {
        this.held = held;
    }

    /** Hands the {@code index}-th held answer to the loader that asked for it. */
    synchronized void release(int index, UnitReply answer) {
        loaders.get(index).tell(answer);
    }

    /** Completes once every slot handed out has been closed. */
    CompletableFuture<Void> everySlotClosed() {
        return everySlotClosed;
    }

    /** How often each slot handed out was closed. */
    synchronized List<Integer> closeCounts() {
        return List.copyOf(closes.values());
    }

    @Override
    public String description() {
        return "cpu (answers held)";
    }

    @Override
    public CpuBackend device() {
        return cpu.device();
    }

    @Override
    public NeuralOps<CpuTensor> ops(CpuExecutor lane) {
        return cpu.ops(lane);
    }

    @Override
    public CpuWork work(Runnable body) {
        return cpu.work(body);
    }

    @Override
    @SuppressWarnings("unchecked")
    public Behavior<MaterializationSupervisor.Command<CpuParameter>> supervisor(CpuExecutor loadingLane, MaterializationSettings settings) {
        Class<MaterializationSupervisor.Command<CpuParameter>> commands =
                (Class<MaterializationSupervisor.Command<CpuParameter>>) (Class<?>) MaterializationSupervisor.Command.class;
        return Behaviors.intercept(() -> new BehaviorInterceptor<>(commands) {
            @Override
            public Behavior<MaterializationSupervisor.Command<CpuParameter>> aroundReceive(
                    TypedActorContext<MaterializationSupervisor.Command<CpuParameter>> ctx, MaterializationSupervisor.Command<CpuParameter> msg,
                    ReceiveTarget<MaterializationSupervisor.Command<CpuParameter>> target) {
                if (msg instanceof MaterializationSupervisor.MaterializeUnit<CpuParameter> unit) {
                    synchronized (HeldAnswerCpuInference.this) {
                        loaders.add(unit.replyTo());
                    }
                    return target.apply(ctx, new MaterializationSupervisor.MaterializeUnit<>(unit.unit(), unit.requests(), held));
                }
                return target.apply(ctx, msg);
            }
        }, cpu.supervisor(loadingLane, settings));
    }

    @Override
    public WeightSlots<CpuParameter, CpuTensor> weightSlots() {
        WeightSlots<CpuParameter, CpuTensor> slots = cpu.weightSlots();
        return new WeightSlots<>() {
            @Override
            public CpuParameter slot(Expected tensor) {
                CpuParameter slot = slots.slot(tensor);
                synchronized (HeldAnswerCpuInference.this) {
                    closes.put(slot, 0);
                }
                return slot;
            }

            @Override
            public CpuTensor tensor(CpuParameter slot, Expected tensor) {
                return slots.tensor(slot, tensor);
            }

            @Override
            public void close(CpuParameter slot) {
                slots.close(slot);
                synchronized (HeldAnswerCpuInference.this) {
                    closes.merge(slot, 1, Integer::sum);
                    if (closes.values().stream().allMatch(n -> n > 0)) {
                        everySlotClosed.complete(null);
                    }
                }
            }
        };
    }

    @Override
    public void close() {
        cpu.close();
    }
}
