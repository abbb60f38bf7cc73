package io.graphlane.inference.weights;

import io.graphlane.actors.materialize.MaterializationSupervisor;
import io.graphlane.actors.materialize.WeightRequest;
import io.graphlane.actors.materialize.WeightSource;
import io.graphlane.checkpoint.CheckpointSource;
import io.graphlane.core.GraphlaneException;
import io.graphlane.core.param.EncodedLease;
import io.graphlane.inference.llama.LlamaConfig;
import io.graphlane.inference.llama.LlamaTensors;
import io.graphlane.inference.llama.LlamaTensors.Expected;
import io.graphlane.inference.llama.StageWeights;
import io.graphlane.inference.stage.StageSpec;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Scheduler;

/**
 * Loads each stage's weights as atomic units through a {@link MaterializationSupervisor} over
 * any parameter backend: every tensor the stage reads ({@link LlamaTensors#forStage}) is planned in the
 * loader's {@link WeightFormat} ({@link WeightPlan}): either leased from the checkpoint as it is, or
 * derived by a recipe (a cast, an 8-bit quantization) whose sources the supervisor leases itself. Each
 * goes to the supervisor with a parameter slot of the planned spec ({@link WeightSlots#slot(Expected,
 * io.graphlane.core.tensor.TensorSpec)}); the supervisor realizes them on its loading lane (on the CPU
 * aligned F32 and 16-bit data used in place, on a GPU uploaded and widened), holds each lease until that
 * realization's exact completion, validates each unit and binds all of it or none of it: the stage is one unit, except
 * that each expert of a mixture-of-experts layer is a unit of its own; when one unit fails, those bound before it are
 * closed, so all of the stage is bound or none of it. The
 * bound weights are wrapped as backend tensors without a copy ({@link WeightSlots#tensor}).
 *
 * <p>This loader owns what it bound: {@link #release} closes one stage's parameters exactly once,
 * {@link #close} those of every stage still held. It blocks the calling thread while a stage loads
 * (it is meant for the thread that builds a model, never for an actor).
 *
 * @param <P> the backend's parameter slot
 * @param <T> the backend tensor
 */
public final class SupervisedWeightsLoader<P, T> implements StageWeightsLoader<T>, AutoCloseable {
    private final SupervisedUnits<P, T> units;
    private final CheckpointSource source;
    private final LlamaConfig config;
    private final WeightSlots<P, T> slots;
    private final WeightFormat format;

    /**
     * A loader of {@code config}'s stages from {@code source} through {@code supervisor}, waiting at
     * most {@code timeout} for each stage's answer ({@code scheduler} times the wait), with the slots
     * and tensors of {@code slots}' backend (the supervisor's parameter backend), every weight in F32.
     */
    public SupervisedWeightsLoader(ActorRef<MaterializationSupervisor.Command<P>> supervisor, Scheduler scheduler,
                                   CheckpointSource source, LlamaConfig config, Duration timeout, WeightSlots<P, T> slots) {
        this(supervisor, scheduler, source, config, timeout, slots, WeightFormat.F32);
    }

    /**
     * A loader as above that holds the weights in {@code format}; a format other than {@link WeightFormat#F32}
     * needs a parameter backend that keeps 16-bit weights as they are when {@code slots} hold narrow weights
     * (on the CPU {@code CpuParameterBackend.keepingHalfPrecision}).
     */
    public SupervisedWeightsLoader(ActorRef<MaterializationSupervisor.Command<P>> supervisor, Scheduler scheduler,
                                   CheckpointSource source, LlamaConfig config, Duration timeout, WeightSlots<P, T> slots,
                                   WeightFormat format) {
        this.format = Objects.requireNonNull(format, "format");
        this.slots = Objects.requireNonNull(slots, "slots");
        WeightPlan.requireHoldable(format, slots.holdsNarrowWeights(), slots.holdsSixteenBitOnly());
        this.units = new SupervisedUnits<>(supervisor, scheduler, timeout, slots);
        this.source = Objects.requireNonNull(source, "source");
        this.config = Objects.requireNonNull(config, "config");
    }

    /**
     * Every weight {@code stage} reads, bound as atomic units (one per expert, one for the rest); the tensors stay valid until {@link #release}.
     *
     * @throws GraphlaneException naming the checkpoint, the stage and every tensor at fault (a missing
     *         tensor, a wrong shape or dtype, a cast the format needs that the dtype refuses, a failed
     *         realization), with each cause attached; then
     *         nothing of the stage is bound and no lease of it stays open
     */
    @Override
    public StageWeights<T> load(StageSpec stage) {
        Objects.requireNonNull(stage, "stage");
        units.requireOpen(stage.toString());
        List<Expected> expected = LlamaTensors.forStage(config, stage);
        CheckpointTensors.requirePresent(source, expected);
        List<P> parameters = bindUnits(stage, expected);
        try {
            Map<String, T> tensors = new HashMap<>();
            for (int i = 0; i < expected.size(); i++) {
                Expected e = expected.get(i);
                tensors.put(e.name(), slots.tensor(parameters.get(i), e));
            }
            StageWeights<T> weights = StageWeightsAssembly.fromNamed(config, stage, tensors);
            units.hold(weights, parameters, stage.toString());
            return weights;
        } catch (RuntimeException e) {
            closeAll(parameters);
            throw e;
        }
    }

    /**
     * Binds {@code expected} as atomic units: each expert of a mixture-of-experts layer (its gate, up and down
     * projections) is a unit of its own, everything else of the stage one more. When a unit fails, the units bound
     * before it are closed too, so nothing of the stage stays bound. Returns the parameters in {@code expected}'s order.
     */
    private List<P> bindUnits(StageSpec stage, List<Expected> expected) {
        Map<String, List<Integer>> unitsByName = new java.util.LinkedHashMap<>();
        for (int i = 0; i < expected.size(); i++) {
            int[] expert = LlamaTensors.expertOf(config, expected.get(i).name());
            String unit = expert == null ? "" : " layer " + expert[0] + " expert " + expert[1];
            unitsByName.computeIfAbsent(unit, k -> new ArrayList<>()).add(i);
        }
        List<P> parameters = new ArrayList<>(java.util.Collections.nCopies(expected.size(), null));
        List<P> bound = new ArrayList<>(expected.size());
        for (Map.Entry<String, List<Integer>> unit : unitsByName.entrySet()) {
            List<Expected> part = unit.getValue().stream().map(expected::get).toList();
            List<P> partParameters = new ArrayList<>(part.size());
            try {
                List<WeightRequest<P>> requests = leaseEvery(stage, part, partParameters);
                units.bind("checkpoint " + source.catalog().dir().getFileName() + " " + stage + unit.getKey(),
                        stage + unit.getKey() + " of checkpoint " + source.catalog().dir(), requests, partParameters);
            } catch (RuntimeException e) {
                closeAll(bound);
                throw e;
            }
            bound.addAll(partParameters);
            for (int j = 0; j < part.size(); j++) {
                parameters.set(unit.getValue().get(j), partParameters.get(j));
            }
        }
        return parameters;
    }

    /**
     * Closes the parameters behind {@code weights} (a stage this loader loaded) exactly once; call it
     * only after every piece of work that reads them has completed.
     *
     * @throws IllegalStateException if this loader does not hold {@code weights} (never loaded here, or already released)
     */
    public void release(StageWeights<T> weights) {
        if (!units.release(weights)) {
            throw new IllegalStateException("the weights of " + weights.stage() + " are not held by this loader: "
                    + "they were released already or loaded elsewhere");
        }
    }

    /** The parameters bound for {@code weights}, in {@link LlamaTensors#forStage} order, while this loader holds them. */
    public List<P> parameters(StageWeights<T> weights) {
        List<P> parameters = units.held(weights);
        if (parameters == null) {
            throw new IllegalStateException("the weights of " + weights.stage() + " are not held by this loader");
        }
        return parameters;
    }

    /** The number of stages loaded and not yet released. */
    public int heldStageCount() {
        return units.heldCount();
    }

    /** Refuses further loads and releases every stage still held, each exactly once; idempotent. */
    @Override
    public void close() {
        units.close();
    }

    /**
     * One request per expected tensor, a lease or a recipe as its {@link WeightPlan} says; if planning or a lease
     * fails, the leases already taken are released and the error names the tensor.
     */
    private List<WeightRequest<P>> leaseEvery(StageSpec stage, List<Expected> expected, List<P> parameters) {
        List<WeightRequest<P>> requests = new ArrayList<>(expected.size());
        List<EncodedLease> taken = new ArrayList<>(expected.size());
        for (Expected e : expected) {
            WeightSource weightSource;
            P parameter;
            try {
                WeightPlan plan = WeightPlan.of(source, e, format, slots.holdsNarrowWeights(), slots.holdsSixteenBitOnly());
                if (plan.recipe().isPresent()) {
                    weightSource = new WeightSource.FromRecipe(plan.recipe().get());
                } else {
                    EncodedLease lease = source.lease(e.sourceName());
                    taken.add(lease);
                    weightSource = new WeightSource.FromLease(lease);
                }
                parameter = slots.slot(e, plan.realized());
            } catch (RuntimeException ex) {
                for (EncodedLease l : taken) {
                    l.release();
                }
                throw new GraphlaneException("checkpoint " + source.catalog().dir() + ": " + stage + ": leasing tensor "
                        + e.name() + (format == WeightFormat.F32 ? "" : " (--weights " + format.optionValue() + ")") + " failed: "
                        + ex.getMessage(), ex);
            }
            parameters.add(parameter);
            requests.add(new WeightRequest<>(e.name(), parameter, weightSource));
        }
        return requests;
    }

    private void closeAll(List<P> parameters) {
        units.closeAll(parameters);
    }
}
