package io.graphlane.inference.offload;

import io.graphlane.actors.lane.WorkTracing;
import io.graphlane.core.backend.SubmissionBackend;
import io.graphlane.core.completion.Completion;
import io.graphlane.inference.llama.LayerWeights;
import io.graphlane.inference.llama.LlamaStage;
import io.graphlane.inference.llama.StageForward;
import io.graphlane.inference.llama.StageWeights;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * A pipeline's weights under a device budget: the {@link OffloadPlan} made from the loaded stages' sizes, the lane
 * group's backend (the device's submissions, with promotions: {@link TransferSubmissions}), which stages get a
 * transfer lane, and each stage's forward ({@link OffloadedStage} where it streams, the stage itself elsewhere).
 *
 * @param <T> the backend tensor
 * @param <E> the executor
 * @param <C> the completion
 * @param <W> backend-native work
 */
public final class WeightStreaming<T, E, C extends Completion, W> {
    private final OffloadPlan plan;
    private final LayerTier<T, E, C> tier;
    private final TransferSubmissions<E, C, W> submissions;

    private WeightStreaming(OffloadPlan plan, LayerTier<T, E, C> tier, TransferSubmissions<E, C, W> submissions) {
        this.plan = plan;
        this.tier = tier;
        this.submissions = submissions;
    }

    /**
     * The plan for {@code stages} (loaded, in pipeline order) under {@code budgetBytes} with a lookahead of
     * {@code lookahead} layers, promoting through {@code tier} on lanes of {@code device}.
     *
     * @throws io.graphlane.core.GraphlaneException naming the option and both sizes if the budget is too small
     */
    public static <T, E, C extends Completion, W> WeightStreaming<T, E, C, W> plan(List<StageWeights<T>> stages, long budgetBytes,
            int lookahead, LayerTier<T, E, C> tier, SubmissionBackend<E, C, W> device) {
        Objects.requireNonNull(tier, "tier");
        Set<T> fixed = Collections.newSetFromMap(new IdentityHashMap<>());
        List<long[]> layerBytes = new ArrayList<>();
        for (StageWeights<T> s : stages) {
            for (T t : new ArrayList<>(java.util.Arrays.asList(s.embedding(), s.finalNorm(), s.lmHead()))) {
                if (t != null) {
                    fixed.add(t);
                }
            }
            long[] bytes = new long[s.layers().size()];
            for (int l = 0; l < bytes.length; l++) {
                LayerWeights<T> layer = s.layers().get(l);
                bytes[l] = tier.bytes(layer);
            }
            layerBytes.add(bytes);
        }
        long fixedBytes = 0;
        for (T t : fixed) {
            fixedBytes += tier.bytes(t);
        }
        OffloadPlan plan = OffloadPlan.plan(budgetBytes, fixedBytes, layerBytes, lookahead);
        return new WeightStreaming<>(plan, tier, new TransferSubmissions<>(device));
    }

    /** The plan. */
    public OffloadPlan plan() {
        return plan;
    }

    /** The backend the pipeline's lanes submit through. */
    public TransferSubmissions<E, C, W> submissions() {
        return submissions;
    }

    /** Whether stage {@code stage} streams layers (and so runs on a transfer lane too). */
    public boolean streams(int stage) {
        return plan.stages().get(stage).streams();
    }

    /** The lane tracing the pipeline's lanes use: {@code inner}, leaving promotions unwrapped. */
    public WorkTracing<W> tracing(WorkTracing<W> inner) {
        return submissions.tracing(inner);
    }

    /** Stage {@code index}'s forward: {@code stage} itself, or, where it streams, {@code stage} with its layers promoted on its transfer lane. */
    public StageForward<T> forward(int index, LlamaStage<T> stage) {
        return streams(index) ? new OffloadedStage<>(stage, plan.stages().get(index), tier, submissions) : stage;
    }
}
