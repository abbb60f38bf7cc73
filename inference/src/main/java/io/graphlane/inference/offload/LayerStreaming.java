package io.graphlane.inference.offload;

import io.graphlane.scheduler.pipeline.StageStep;
import java.util.ArrayList;
import java.util.List;

/**
 * One stage's step when some of its layers are streamed: submissions on the stage's compute lane
 * ({@link #COMPUTE_LANE}) and its transfer lane ({@link #TRANSFER_LANE}), ordered by completion handles.
 *
 * <pre>
 *   0  hand-off   compute lane, an entry: no work; takes the previous stage's hand-off and follows the lane's last step
 *   P0..PL        transfer lane, after the hand-off: promote streamed layers 0..L
 *   G0            compute lane, an entry: the stage's input and the layers before streamed layer 0
 *   Gi  (i ≥ 1)   compute lane, after G(i−1) and P(i−1): streamed layer i−1 and the resident layers after it
 *   P(i+L)        transfer lane, after Gi: promote streamed layer i+L once layer i−1's reader completed
 * </pre>
 *
 * So the compute lane reads a promoted layer only after its promotion's completion; within a step at most
 * {@code L + 1} promoted layers of the stage are held at once, in lane order (a promotion waits for the reader of the
 * streamed layer {@code L + 1} before it); a promoted layer is retained by its promotion and by its reader, and freed
 * once both completed. The last group is the stage's only exit. Only the entries (the hand-off and G0) read or hold
 * the previous stage's output. A lane hands on work in the order it becomes ready, so two steps' works could
 * interleave: a program streaming layers keeps one micro-batch in flight, which also bounds the whole pipeline.
 */
public final class LayerStreaming {
    /** The stage lane its layers are computed on. */
    public static final int COMPUTE_LANE = 0;
    /** The stage lane its streamed layers are promoted on. */
    public static final int TRANSFER_LANE = 1;

    private LayerStreaming() {
    }

    /**
     * What a streamed step is made of, in the work type {@code X} its program turns into backend work.
     *
     * @param <X> a work body
     */
    public interface Parts<X> {
        /** The hand-off: work that does nothing. */
        X handOff();

        /**
         * The compute of stage-local layers {@code [from, to)} (empty for group 0 when the first layer streams); group 0
         * also takes the stage's input, and the last group (whose {@code to} is the stage's layer count) makes its output.
         */
        X compute(int group, int from, int to);

        /** The promotion of stage-local layer {@code layer}. */
        X promote(int layer);

        /** What the promotion of {@code layer} retains until its exact completion. */
        List<Object> promotionRetains(int layer);

        /**
         * What compute group {@code group} (layers {@code [from, to)}) retains until its exact completion: at least,
         * for every group but 0, the reader's hold on the promoted copy of streamed layer {@code from}.
         */
        List<Object> computeRetains(int group, int from, int to);
    }

    /** The submissions of one step of {@code stage}, which must stream at least one layer. */
    public static <X> List<StageStep.Submission<X>> plan(OffloadPlan.Stage stage, Parts<X> parts) {
        int layers = stage.layerBytes().length;
        List<Integer> streamed = new ArrayList<>();
        for (int l = 0; l < layers; l++) {
            if (!stage.isResident(l)) {
                streamed.add(l);
            }
        }
        if (streamed.isEmpty()) {
            throw new IllegalArgumentException("stage " + stage.stage() + " streams no layer: plan its step as one work");
        }
        int lookahead = stage.lookahead();
        int s = streamed.size();
        List<StageStep.Submission<X>> out = new ArrayList<>();
        int[] promotionIndex = new int[s];
        out.add(new StageStep.Submission<>(COMPUTE_LANE, parts.handOff(), List.of()));
        int handOff = 0;
        for (int i = 0; i <= Math.min(lookahead, s - 1); i++) {
            promotionIndex[i] = out.size();
            out.add(new StageStep.Submission<>(TRANSFER_LANE, parts.promote(streamed.get(i)), List.of(handOff),
                    parts.promotionRetains(streamed.get(i))));
        }
        int previousGroup = out.size();
        out.add(new StageStep.Submission<>(COMPUTE_LANE, parts.compute(0, 0, streamed.get(0)), List.of(),
                parts.computeRetains(0, 0, streamed.get(0))));
        for (int i = 0; i < s; i++) {
            int from = streamed.get(i);
            int to = i + 1 < s ? streamed.get(i + 1) : layers;
            int group = out.size();
            out.add(new StageStep.Submission<>(COMPUTE_LANE, parts.compute(i + 1, from, to), List.of(previousGroup, promotionIndex[i]),
                    parts.computeRetains(i + 1, from, to)));
            previousGroup = group;
            int next = i + lookahead + 1;
            if (next < s) {
                promotionIndex[next] = out.size();
                out.add(new StageStep.Submission<>(TRANSFER_LANE, parts.promote(streamed.get(next)), List.of(group),
                        parts.promotionRetains(streamed.get(next))));
            }
        }
        return out;
    }
}
