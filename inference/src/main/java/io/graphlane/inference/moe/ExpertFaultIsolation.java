package io.graphlane.inference.moe;

import io.graphlane.inference.generate.StagedModel;
import io.graphlane.inference.llama.ExpertRankFailedException;
import io.graphlane.inference.llama.LlamaStage;
import io.graphlane.inference.llama.Segment;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A step that an expert rank's failure fails only for the requests it hits: when a sparse layer's rank fails
 * ({@link ExpertRankFailedException}, naming the requests whose rows were routed to it), those requests fail and their
 * caches are freed, every other request's cache is rewound to where the step began, and the step runs again for them.
 * A survivor whose rows reach the failed rank in a later layer fails on the next try; every try drops at least one
 * request, so the loop ends.
 */
public final class ExpertFaultIsolation {
    private ExpertFaultIsolation() {
    }

    /** The logits of the requests that completed the step, and the failure of each that did not. */
    public record Outcome(Map<Long, float[]> logits, Map<Long, ExpertRankFailedException> failed) {
    }

    /** Runs {@code segments} (their tokens {@code tokenIds}, in order) on {@code model}, isolating expert-rank failures. */
    public static <T> Outcome step(StagedModel<T> model, List<Segment> segments, int[] tokenIds) {
        List<Segment> live = new ArrayList<>(segments);
        List<int[]> tokens = new ArrayList<>();
        int at = 0;
        for (Segment s : segments) {
            tokens.add(java.util.Arrays.copyOfRange(tokenIds, at, at + s.length()));
            at += s.length();
        }
        Map<Long, ExpertRankFailedException> failed = new LinkedHashMap<>();
        while (!live.isEmpty()) {
            int total = live.stream().mapToInt(Segment::length).sum();
            int[] ids = new int[total];
            int pos = 0;
            for (int i = 0; i < live.size(); i++) {
                System.arraycopy(tokens.get(i), 0, ids, pos, tokens.get(i).length);
                pos += tokens.get(i).length;
            }
            try {
                float[][] logits = model.step(live, ids);
                Map<Long, float[]> out = new LinkedHashMap<>();
                for (int i = 0; i < live.size(); i++) {
                    out.put(live.get(i).requestId(), logits[i]);
                }
                return new Outcome(out, failed);
            } catch (ExpertRankFailedException e) {
                if (e.requests().isEmpty()) {
                    throw e;
                }
                for (int i = live.size() - 1; i >= 0; i--) {
                    Segment s = live.get(i);
                    if (e.requests().contains(s.requestId())) {
                        failed.put(s.requestId(), e);
                        model.endRequest(s.requestId());
                        live.remove(i);
                        tokens.remove(i);
                    } else {
                        for (LlamaStage<T> stage : model.stages()) {
                            stage.rewind(s.requestId(), s.startPosition());
                        }
                    }
                }
            }
        }
        return new Outcome(Map.of(), failed);
    }
}
