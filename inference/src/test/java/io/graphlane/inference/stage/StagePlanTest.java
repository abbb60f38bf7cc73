package io.graphlane.inference.stage;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.core.GraphlaneException;
import io.graphlane.core.topology.Range;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Balanced contiguous stage plans and the roles of the first and last stage. */
class StagePlanTest {

    @Test
    void sevenLayersInThreeStagesGiveTheExtraLayersToTheFirstStages() {
        StagePlan plan = StagePlan.balanced(7, 3);
        assertEquals(List.of(new Range(0, 3), new Range(3, 5), new Range(5, 7)), plan.stages().stream().map(StageSpec::layers).toList());
        assertTrue(plan.stage(0).isFirst());
        assertFalse(plan.stage(0).isLast());
        assertTrue(plan.stage(2).isLast());
    }

    @Test
    void oneStageIsBothFirstAndLast() {
        StageSpec only = StagePlan.balanced(4, 1).stage(0);
        assertTrue(only.isFirst() && only.isLast());
        assertEquals(new Range(0, 4), only.layers());
    }

    @Test
    void moreStagesThanLayersIsRefusedWithBothNumbers() {
        GraphlaneException e = assertThrows(GraphlaneException.class, () -> StagePlan.balanced(4, 5));
        assertTrue(e.getMessage().contains("4 layers into 5 stages"), e.getMessage());
        assertThrows(GraphlaneException.class, () -> StagePlan.balanced(4, 0));
    }
}
