package io.graphlane.inference.stage;

import io.graphlane.core.GraphlaneException;
import io.graphlane.core.topology.Range;
import java.util.ArrayList;
import java.util.List;

/**
 * A model's decoder layers split into balanced contiguous stages ({@link Range#balanced}):
 * the first {@code layers % stages} stages get one layer more.
 *
 * @param layerCount the model's decoder layers
 * @param stages     the stages, in pipeline order, covering every layer exactly once
 */
public record StagePlan(int layerCount, List<StageSpec> stages) {

    /** Copies the stage list. */
    public StagePlan {
        stages = List.copyOf(stages);
    }

    /**
     * Splits {@code layerCount} layers into {@code stageCount} stages.
     *
     * @throws GraphlaneException naming both numbers if there are fewer layers than stages or no stage
     */
    public static StagePlan balanced(int layerCount, int stageCount) {
        if (stageCount < 1 || stageCount > layerCount) {
            throw new GraphlaneException("cannot split " + layerCount + " layers into " + stageCount
                    + " stages: choose between 1 and " + layerCount + " stages");
        }
        List<StageSpec> stages = new ArrayList<>(stageCount);
        for (int i = 0; i < stageCount; i++) {
            stages.add(new StageSpec(i, stageCount, Range.balanced(layerCount, stageCount, i)));
        }
        return new StagePlan(layerCount, stages);
    }

    /** The number of stages. */
    public int size() {
        return stages.size();
    }

    /** Stage {@code index}. */
    public StageSpec stage(int index) {
        return stages.get(index);
    }
}
