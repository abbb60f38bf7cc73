package io.graphlane.inference.offload;

import io.graphlane.core.completion.Completion;
import io.graphlane.core.nn.NeuralOps;
import io.graphlane.inference.llama.LayerWeights;
import io.graphlane.inference.llama.LlamaStage;
import io.graphlane.inference.llama.LlamaStep;
import io.graphlane.inference.llama.StageForward;
import io.graphlane.inference.llama.StageInput;
import io.graphlane.inference.llama.StageOutput;
import io.graphlane.scheduler.pipeline.StageStep;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * A {@link LlamaStage} some of whose layers live in host memory: each step is planned by {@link LayerStreaming} as
 * compute works on the stage's lane (a {@link LlamaStep} run in ranges of layers) and promotions of the streamed
 * layers through the backend's {@link LayerTier} on the stage's transfer lane, started by the lane's actor through
 * {@link TransferSubmissions}. The stage's own state (its KV caches) is the wrapped stage's, changed only by work on
 * the compute lane.
 *
 * @param <T> the backend tensor
 * @param <E> the executor
 * @param <C> the completion
 * @param <W> backend-native work
 */
public final class OffloadedStage<T, E, C extends Completion, W> implements StageForward<T> {
    private final LlamaStage<T> stage;
    private final OffloadPlan.Stage plan;
    private final LayerTier<T, E, C> tier;
    private final TransferSubmissions<E, C, W> submissions;
    private final AtomicLong promotedBytes = new AtomicLong();
    private final AtomicLong promotions = new AtomicLong();

    /** {@code stage} streaming the layers {@code plan} does not keep resident, promoted by {@code tier} through {@code submissions}. */
    public OffloadedStage(LlamaStage<T> stage, OffloadPlan.Stage plan, LayerTier<T, E, C> tier, TransferSubmissions<E, C, W> submissions) {
        this.stage = Objects.requireNonNull(stage, "stage");
        this.plan = Objects.requireNonNull(plan, "plan");
        this.tier = Objects.requireNonNull(tier, "tier");
        this.submissions = Objects.requireNonNull(submissions, "submissions");
        if (plan.layerBytes().length != stage.weights().layers().size()) {
            throw new IllegalArgumentException(stage.spec() + " has " + stage.weights().layers().size() + " layers, its plan "
                    + plan.layerBytes().length);
        }
    }

    /** The stage's residency. */
    public OffloadPlan.Stage offloadPlan() {
        return plan;
    }

    /** Bytes promoted so far. */
    public long promotedBytes() {
        return promotedBytes.get();
    }

    /** Promotions started so far. */
    public long promotions() {
        return promotions.get();
    }

    /**
     * One step's submissions: lane {@link LayerStreaming#COMPUTE_LANE} is the stage's lane, lane
     * {@link LayerStreaming#TRANSFER_LANE} its transfer lane. The first compute work runs {@code beforeStep} and reads
     * {@code input}; the last gives the output to {@code deliver}. {@code asWork} makes each body the backend's work.
     */
    public List<StageStep.Submission<W>> plan(Supplier<StageInput<T>> input, Consumer<StageOutput<T>> deliver, Runnable beforeStep,
                                              Function<Runnable, W> asWork) {
        int layers = plan.layerBytes().length;
        List<LayerWeights<T>> hostLayers = stage.weights().layers();
        List<PromotedLayer<LayerTier.Promotion<T, C>>> promoted = new ArrayList<>(Collections.nCopies(layers, null));
        List<AutoCloseable> registrations = new ArrayList<>(Collections.nCopies(layers, null));
        for (int l = 0; l < layers; l++) {
            if (!plan.isResident(l)) {
                promoted.set(l, new PromotedLayer<>(stage.spec() + " layer " + (plan.firstLayer() + l), p -> p.free().run()));
            }
        }
        StepHold<T> step = new StepHold<>(1 + plan.streamedCount());
        return LayerStreaming.plan(plan, new LayerStreaming.Parts<>() {
            @Override
            public W handOff() {
                return asWork.apply(() -> { });
            }

            @Override
            public W compute(int group, int from, int to) {
                return asWork.apply(() -> {
                    if (group == 0) {
                        beforeStep.run();
                        step.step = stage.begin(input.get());
                    }
                    LlamaStep<T> s = step.step;
                    s.layers(from, to, l -> plan.isResident(l) ? hostLayers.get(l) : readable(promoted.get(l)).device());
                    if (to == layers) {
                        deliver.accept(s.finish());
                    }
                });
            }

            @Override
            public W promote(int layer) {
                W marker = asWork.apply(() -> {
                    throw new IllegalStateException("a promotion ran as plain work: its lane does not submit through TransferSubmissions");
                });
                String name = "layer-" + (plan.firstLayer() + layer);
                registrations.set(layer, submissions.register(marker, lane -> {
                    LayerTier.Promotion<T, C> p = tier.promote(lane, name, hostLayers.get(layer));
                    promoted.get(layer).set(p);
                    promotions.incrementAndGet();
                    promotedBytes.addAndGet(plan.layerBytes()[layer]);
                    return p.completion();
                }));
                return marker;
            }

            @Override
            public List<Object> promotionRetains(int layer) {
                return List.of(promoted.get(layer).holds().get(0), registrations.get(layer));
            }

            @Override
            public List<Object> computeRetains(int group, int from, int to) {
                return group == 0 ? List.of(step.hold()) : List.of(step.hold(), promoted.get(from).holds().get(1));
            }
        });
    }

    /** The promoted copy of a layer, for its reader; refused (naming it) if its bytes were already given back. */
    private static <P> P readable(PromotedLayer<P> layer) {
        P copy = layer.get();
        if (layer.isFreed()) {
            throw new IllegalStateException(layer + " is read after its device copy was freed");
        }
        return copy;
    }

    /** The step shared by a stage step's compute works, closed once every one of them let go. */
    private static final class StepHold<T> {
        private final AtomicInteger holders;
        volatile LlamaStep<T> step;

        StepHold(int holders) {
            this.holders = new AtomicInteger(holders);
        }

        AutoCloseable hold() {
            java.util.concurrent.atomic.AtomicBoolean closed = new java.util.concurrent.atomic.AtomicBoolean();
            return () -> {
                if (closed.compareAndSet(false, true) && holders.decrementAndGet() == 0 && step != null) {
                    step.close();
                }
            };
        }
    }

    /** Runs the whole step at once; an offloaded stage's steps are planned ({@link #plan}), never run this way. */
    @Override
    public StageOutput<T> forward(StageInput<T> input) {
        throw new UnsupportedOperationException(stage.spec() + " streams layers: its steps run as planned works on its compute and transfer lanes");
    }

    @Override
    public NeuralOps<T> ops() {
        return stage.ops();
    }

    @Override
    public boolean endRequest(long requestId) {
        return stage.endRequest(requestId);
    }

    @Override
    public boolean rewind(long requestId, int position) {
        return stage.rewind(requestId, position);
    }

    @Override
    public long kvCachePositions() {
        return stage.kvCachePositions();
    }

    @Override
    public long kvBytesPerPosition() {
        return stage.kvBytesPerPosition();
    }

    @Override
    public void close() {
        stage.close();
    }
}
