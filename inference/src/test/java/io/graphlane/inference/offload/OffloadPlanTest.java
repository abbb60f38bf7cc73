package io.graphlane.inference.offload;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.core.GraphlaneException;
import io.graphlane.scheduler.pipeline.StageStep;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

class OffloadPlanTest {

    private static long[] uniform(int layers, long bytes) {
        long[] b = new long[layers];
        Arrays.fill(b, bytes);
        return b;
    }

    @Test
    void everythingStaysResidentWhenTheBudgetHoldsIt() {
        OffloadPlan plan = OffloadPlan.plan(1000, 200, List.of(uniform(8, 100)), 1);
        assertFalse(plan.streams());
        assertEquals(0, plan.streamedBytesPerStep());
    }

    @Test
    void residentLayersFillWhatTheWindowLeavesAndAreSpreadFirstLayerFirst() {
        // 8 layers of 100, budget 600: a window of 2 layers (lookahead 1) leaves 400: 4 resident, every other one.
        OffloadPlan plan = OffloadPlan.plan(600, 0, List.of(uniform(8, 100)), 1);
        OffloadPlan.Stage s = plan.stages().get(0);
        assertArrayEquals(new boolean[] {true, false, true, false, true, false, true, false}, s.resident());
        assertEquals(400, plan.streamedBytesPerStep());
        assertEquals(600, plan.peakDeviceBytes());
        assertEquals(1, s.lookahead());
    }

    @Test
    void largerLayersStayResidentFirstSoFewerBytesMove() {
        // Layers 300, 100, 100, 100 and 550: with 300 resident only 100s stream (window 100 at lookahead 0), so one more
        // 100 fits: 200 moved per step. Streaming the 300 would need a window of 300 and move at least 300.
        OffloadPlan plan = OffloadPlan.plan(550, 0, List.of(new long[] {300, 100, 100, 100}), 0);
        assertArrayEquals(new boolean[] {true, true, false, false}, plan.stages().get(0).resident());
        assertEquals(200, plan.streamedBytesPerStep());
        assertEquals(500, plan.peakDeviceBytes());
    }

    @Test
    void theLookaheadShrinksToWhatTheBudgetHolds() {
        OffloadPlan plan = OffloadPlan.plan(250, 0, List.of(uniform(8, 100)), 3);
        assertEquals(1, plan.stages().get(0).lookahead());
        assertTrue(plan.describe().get(1).contains("asked 3"), plan.describe().toString());
    }

    @Test
    void aBudgetBelowTheFixedWeightsPlusTheLargestLayerIsRefusedNamingBoth() {
        GraphlaneException e = assertThrows(GraphlaneException.class,
                () -> OffloadPlan.plan(500, 200, List.of(new long[] {100, 400, 100}), 1));
        assertTrue(e.getMessage().contains("--device-weights-budget") && e.getMessage().contains("500 bytes")
                && e.getMessage().contains("400 bytes") && e.getMessage().contains("200 bytes"), e.getMessage());
    }

    @Test
    void eachStreamingStageNeedsItsOwnWindow() {
        GraphlaneException e = assertThrows(GraphlaneException.class,
                () -> OffloadPlan.plan(150, 0, List.of(uniform(2, 100), uniform(2, 100)), 0));
        assertTrue(e.getMessage().contains("at least 200.0 bytes") || e.getMessage().contains("(200 bytes)"), e.getMessage());
    }

    @Test
    void aStreamedStepOrdersEveryReaderAfterItsPromotionAndBoundsTheWindow() {
        // R S S R S: lookahead 1
        OffloadPlan.Stage stage = new OffloadPlan.Stage(0, 0, uniform(5, 1), new boolean[] {true, false, false, true, false}, 1);
        List<String> names = new ArrayList<>();
        List<StageStep.Submission<String>> subs = LayerStreaming.plan(stage, new LayerStreaming.Parts<>() {
            @Override
            public String handOff() {
                return "H";
            }

            @Override
            public String compute(int group, int from, int to) {
                return "G[" + from + "," + to + ")";
            }

            @Override
            public String promote(int layer) {
                return "P" + layer;
            }

            @Override
            public List<Object> promotionRetains(int layer) {
                return List.of("p" + layer);
            }

            @Override
            public List<Object> computeRetains(int group, int from, int to) {
                return group == 0 ? List.of() : List.of("r" + from);
            }
        });
        subs.forEach(s -> names.add(s.work()));
        assertEquals(List.of("H", "P1", "P2", "G[0,1)", "G[1,2)", "P4", "G[2,4)", "G[4,5)"), names);
        // P1, P2 after the hand-off; G[0,1) an entry; each reader after the previous group and its promotion; P4 after G[1,2)
        assertEquals(List.of(0), subs.get(1).after());
        assertEquals(List.of(0), subs.get(2).after());
        assertEquals(List.of(), subs.get(3).after());
        assertEquals(List.of(3, 1), subs.get(4).after());
        assertEquals(List.of(4), subs.get(5).after());
        assertEquals(List.of(4, 2), subs.get(6).after());
        assertEquals(List.of(6, 5), subs.get(7).after());
        assertEquals(LayerStreaming.TRANSFER_LANE, subs.get(5).lane());
        assertEquals(List.of("p4"), subs.get(5).retain());
        assertEquals(List.of("r4"), subs.get(7).retain());
    }
}
