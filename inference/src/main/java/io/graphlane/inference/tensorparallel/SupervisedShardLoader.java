package io.graphlane.inference.tensorparallel;

import io.graphlane.actors.materialize.MaterializationSupervisor;
import io.graphlane.actors.materialize.WeightRequest;
import io.graphlane.actors.materialize.WeightSource;
import io.graphlane.checkpoint.CheckpointSource;
import io.graphlane.checkpoint.recipe.DerivedWeight;
import io.graphlane.checkpoint.recipe.Recipe;
import io.graphlane.core.GraphlaneException;
import io.graphlane.core.param.EncodedLease;
import io.graphlane.core.tensor.DType;
import io.graphlane.core.tensor.Shape;
import io.graphlane.core.tensor.TensorSpec;
import io.graphlane.core.topology.Range;
import io.graphlane.inference.llama.LayerWeights;
import io.graphlane.inference.llama.LlamaConfig;
import io.graphlane.inference.llama.LlamaTensors;
import io.graphlane.inference.llama.LlamaTensors.Expected;
import io.graphlane.inference.stage.StageSpec;
import io.graphlane.inference.weights.CheckpointTensors;
import io.graphlane.inference.weights.StageWeightsAssembly;
import io.graphlane.inference.weights.SupervisedUnits;
import io.graphlane.inference.weights.WeightFormat;
import io.graphlane.inference.weights.WeightPlan;
import io.graphlane.inference.weights.WeightSlots;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Scheduler;

/**
 * Loads one rank's shard of a stage as one atomic unit through a {@link MaterializationSupervisor}: the shard's
 * selection of the checkpoint ({@link #selection}: its heads of q/k/v, its rows of gate/up, its columns of o and
 * down, the replicated norms, and on rank 0 the embedding and head) is expressed as derived weights whose slice
 * is pushed down to the checkpoint ({@link DerivedWeight#shard}), so the rank leases only the bytes it owns. The
 * supervisor realizes them on its loading lane, holds each lease until that realization's exact completion, and
 * binds the whole shard or none of it; every weight is F32.
 *
 * <p>This loader owns what it bound: {@link #release} closes one shard's parameters exactly once, {@link #close}
 * those of every shard still held. It blocks the calling thread while a shard loads (it is meant for the thread
 * that builds a model, never for an actor).
 *
 * @param <P> the backend's parameter slot
 * @param <T> the backend tensor
 */
public final class SupervisedShardLoader<P, T> implements AutoCloseable {

    /**
     * One tensor of a shard's selection.
     *
     * @param whole the tensor as the checkpoint holds it
     * @param part  the shard's part of it (its rows and columns as the rank reads them)
     * @param axis  the checkpoint axis sliced, or -1 when the rank reads the whole tensor
     * @param range the indices of {@code axis} the rank reads (the whole axis when {@code axis} is -1)
     */
    public record ShardTensor(Expected whole, Expected part, int axis, Range range) {
        public ShardTensor {
            Objects.requireNonNull(whole, "whole");
            Objects.requireNonNull(part, "part");
        }
    }

    private final SupervisedUnits<P, T> units;
    private final CheckpointSource source;
    private final LlamaConfig config;
    private final TensorParallelism tp;
    private final WeightSlots<P, T> slots;

    /**
     * A loader of {@code tp}'s shards from {@code source} through {@code supervisor}, waiting at most {@code timeout}
     * for each shard's answer ({@code scheduler} times the wait), with the slots and tensors of {@code slots}' backend.
     */
    public SupervisedShardLoader(ActorRef<MaterializationSupervisor.Command<P>> supervisor, Scheduler scheduler,
                                 CheckpointSource source, TensorParallelism tp, Duration timeout, WeightSlots<P, T> slots) {
        this.units = new SupervisedUnits<>(supervisor, scheduler, timeout, slots);
        this.source = Objects.requireNonNull(source, "source");
        this.tp = Objects.requireNonNull(tp, "tp");
        this.config = tp.config();
        this.slots = slots;
    }

    /**
     * The tensors rank {@code rank} of {@code stage} reads, in load order: per layer its norms (whole), its rows of
     * q/k/v (and their biases) and of gate/up, its columns of o and down, the output bias (whole); on rank 0 the
     * embedding (first stage) and the final norm and head (last stage; a tied head is the embedding's tensor).
     */
    public static List<ShardTensor> selection(TensorParallelism tp, StageSpec stage, int rank) {
        LlamaConfig c = tp.config();
        if (rank < 0 || rank >= tp.size()) {
            throw new IllegalArgumentException("rank " + rank + " is outside tensor-parallel degree " + tp.size());
        }
        List<ShardTensor> tensors = new ArrayList<>();
        int hidden = c.hiddenSize();
        if (rank == 0 && stage.isFirst()) {
            tensors.add(whole(new Expected(LlamaTensors.EMBEDDING, c.vocabSize(), hidden, false)));
        }
        Range q = tp.queryFeatures(rank);
        Range kv = tp.kvFeatures(rank);
        Range mlp = tp.intermediateFeatures(rank);
        for (int l = stage.layers().start(); l < stage.layers().end(); l++) {
            for (Expected e : LlamaTensors.forLayer(c, l)) {
                String field = e.name().substring(LlamaTensors.layer(l, "").length());
                tensors.add(switch (field) {
                    case "self_attn.q_proj.weight" -> rows(e, q);
                    case "self_attn.k_proj.weight", "self_attn.v_proj.weight" -> rows(e, kv);
                    case "self_attn.o_proj.weight" -> cols(e, q);
                    case "self_attn.q_proj.bias" -> vector(e, q);
                    case "self_attn.k_proj.bias", "self_attn.v_proj.bias" -> vector(e, kv);
                    case "mlp.gate_proj.weight", "mlp.up_proj.weight" -> rows(e, mlp);
                    case "mlp.gate_proj.bias", "mlp.up_proj.bias" -> vector(e, mlp);
                    case "mlp.down_proj.weight" -> cols(e, mlp);
                    // norms (Qwen3's per-head ones serve every head), and the biases added after the all-reduce
                    default -> whole(e);
                });
            }
        }
        if (rank == 0 && stage.isLast()) {
            tensors.add(whole(new Expected(LlamaTensors.FINAL_NORM, 1, hidden, true)));
            if (!(c.tieWordEmbeddings() && stage.isFirst())) {
                String head = c.tieWordEmbeddings() ? LlamaTensors.EMBEDDING : LlamaTensors.LM_HEAD;
                tensors.add(whole(new Expected(head, c.vocabSize(), hidden, false)));
            }
        }
        return tensors;
    }

    /**
     * Rank {@code rank}'s weights of {@code stage}, bound as one unit; the tensors stay valid until {@link #release}.
     *
     * @throws GraphlaneException naming the checkpoint, the shard and every tensor at fault (a missing tensor, a wrong
     *         shape or dtype, a selection outside the tensor, a failed realization); then nothing of the shard is
     *         bound and no lease of it stays open
     */
    public ShardWeights<T> load(StageSpec stage, int rank) {
        Objects.requireNonNull(stage, "stage");
        units.requireOpen("shard " + rank + " of " + stage);
        List<ShardTensor> selection = selection(tp, stage, rank);
        CheckpointTensors.requirePresent(source, selection.stream().map(ShardTensor::whole).toList());
        String what = "shard " + rank + "/" + tp.size() + " of " + stage + " of checkpoint " + source.catalog().dir();
        List<P> parameters = new ArrayList<>(selection.size());
        List<WeightRequest<P>> requests = requests(what, selection, parameters);
        units.bind("checkpoint " + source.catalog().dir().getFileName() + " " + stage + " shard " + rank + "/" + tp.size(),
                what, requests, parameters);
        try {
            Map<String, T> tensors = new HashMap<>();
            for (int i = 0; i < selection.size(); i++) {
                Expected part = selection.get(i).part();
                tensors.put(part.name(), slots.tensor(parameters.get(i), part));
            }
            ShardWeights<T> weights = assemble(stage, rank, tensors);
            units.hold(weights, parameters, "shard " + rank + " of " + stage);
            return weights;
        } catch (RuntimeException e) {
            units.closeAll(parameters);
            throw e;
        }
    }

    /**
     * Closes the parameters behind {@code weights} (a shard this loader loaded) exactly once; call it only after every
     * piece of work that reads them has completed.
     *
     * @throws IllegalStateException if this loader does not hold {@code weights} (never loaded here, or already released)
     */
    public void release(ShardWeights<T> weights) {
        if (!units.release(weights)) {
            throw new IllegalStateException("shard " + weights.rank() + " of " + weights.stage() + " is not held by this loader: "
                    + "it was released already or loaded elsewhere");
        }
    }

    /** The parameters bound for {@code weights}, in {@link #selection} order, while this loader holds them. */
    public List<P> parameters(ShardWeights<T> weights) {
        List<P> parameters = units.held(weights);
        if (parameters == null) {
            throw new IllegalStateException("shard " + weights.rank() + " of " + weights.stage() + " is not held by this loader");
        }
        return parameters;
    }

    /** The number of shards loaded and not yet released. */
    public int heldShardCount() {
        return units.heldCount();
    }

    /** Refuses further loads and releases every shard still held, each exactly once; idempotent. */
    @Override
    public void close() {
        units.close();
    }

    /**
     * One request per tensor of the selection: a whole tensor as its F32 {@link WeightPlan} says (a lease or a cast),
     * a part as a derived weight (cast to F32 if stored narrower, then sliced); if one fails, the leases already taken
     * are released and the error names the tensor.
     */
    private List<WeightRequest<P>> requests(String what, List<ShardTensor> selection, List<P> parameters) {
        List<WeightRequest<P>> requests = new ArrayList<>(selection.size());
        List<EncodedLease> taken = new ArrayList<>();
        for (ShardTensor t : selection) {
            String name = t.whole().name();
            WeightSource weightSource;
            P parameter;
            try {
                Recipe recipe = checked(t.whole());
                if (t.axis() < 0) {
                    WeightPlan plan = WeightPlan.of(source, t.whole(), WeightFormat.F32, slots.holdsNarrowWeights());
                    if (plan.recipe().isPresent()) {
                        weightSource = new WeightSource.FromRecipe(plan.recipe().get());
                    } else {
                        EncodedLease lease = source.lease(t.whole().sourceName());
                        taken.add(lease);
                        weightSource = new WeightSource.FromLease(lease);
                    }
                    parameter = slots.slot(t.whole(), plan.realized());
                } else {
                    if (recipe.spec().dtype() != DType.F32) {
                        recipe = recipe.cast(DType.F32);
                    }
                    DerivedWeight part = DerivedWeight.of(name, recipe).shard(t.axis(), t.range().start(), t.range().end());
                    weightSource = new WeightSource.FromRecipe(part);
                    parameter = slots.slot(t.part(), new TensorSpec(DType.F32, Shape.of(t.part().checkpointShape())));
                }
            } catch (RuntimeException ex) {
                for (EncodedLease l : taken) {
                    l.release();
                }
                throw new GraphlaneException(what + ": tensor " + name + ": " + ex.getMessage(), ex);
            }
            parameters.add(parameter);
            requests.add(new WeightRequest<>(name, parameter, weightSource));
        }
        return requests;
    }

    /** The tensor {@code expected} names as a recipe, checked for its shape and for a dtype the model reads. */
    private Recipe checked(Expected expected) {
        Recipe recipe = LlamaTensors.recipe(source, expected);
        Shape found = recipe.spec().shape();
        if (!found.equals(Shape.of(expected.checkpointShape()))) {
            throw new GraphlaneException("shape " + found + ", expected " + Shape.of(expected.checkpointShape()));
        }
        DType dtype = recipe.spec().dtype();
        if (dtype != DType.F32 && dtype != DType.BF16 && dtype != DType.F16) {
            throw new GraphlaneException("dtype " + dtype + "; the model reads F32, F16 or BF16 weights");
        }
        return recipe;
    }

    private ShardWeights<T> assemble(StageSpec stage, int rank, Map<String, T> t) {
        List<LayerWeights<T>> layers = new ArrayList<>();
        for (int l = stage.layers().start(); l < stage.layers().end(); l++) {
            layers.add(StageWeightsAssembly.layer(config, l, t));
        }
        T embedding = rank == 0 && stage.isFirst() ? t.get(LlamaTensors.EMBEDDING) : null;
        T finalNorm = rank == 0 && stage.isLast() ? t.get(LlamaTensors.FINAL_NORM) : null;
        T head = rank == 0 && stage.isLast() ? t.get(config.tieWordEmbeddings() ? LlamaTensors.EMBEDDING : LlamaTensors.LM_HEAD) : null;
        return new ShardWeights<>(stage, rank, embedding, layers, finalNorm, head);
    }

    private static ShardTensor whole(Expected e) {
        return new ShardTensor(e, e, -1, new Range(0, e.vector() ? e.cols() : e.rows()));
    }

    /** Rows {@code part} of the matrix {@code e} (axis 0; of a fused tensor's rows where it is fused). */
    private static ShardTensor rows(Expected e, Range part) {
        return new ShardTensor(e, e.withShape(part.size(), e.cols()), 0, part);
    }

    /** Columns {@code part} of the matrix {@code e} (axis 1). */
    private static ShardTensor cols(Expected e, Range part) {
        return new ShardTensor(e, e.withShape(e.rows(), part.size()), 1, part);
    }

    /** Elements {@code part} of the vector {@code e}. */
    private static ShardTensor vector(Expected e, Range part) {
        return new ShardTensor(e, e.withShape(1, part.size()), 0, part);
    }
}
