package io.graphlane.cluster;

import java.util.ArrayList;
import java.util.List;

/** Which rank hosts which pipeline stage: stage i on rank i mod N. */
public final class StagePlacement {
    private StagePlacement() {
    }

    /**
     * The stages rank {@code rank} of {@code nodes} hosts, ascending (empty when {@code stages < nodes} leaves
     * the rank without one).
     *
     * @throws ClusterConfigException if {@code stages < 1}, {@code nodes < 1} or the rank is outside {@code [0, nodes)}
     */
    public static List<Integer> stagesOf(int rank, int nodes, int stages) {
        if (stages < 1) {
            throw new ClusterConfigException("--stages must be >= 1, got " + stages);
        }
        if (nodes < 1 || rank < 0 || rank >= nodes) {
            throw new ClusterConfigException("rank " + rank + " is outside [0, " + nodes + ") for --nodes " + nodes);
        }
        List<Integer> mine = new ArrayList<>();
        for (int s = rank; s < stages; s += nodes) {
            mine.add(s);
        }
        return List.copyOf(mine);
    }

    /** The rank that hosts stage {@code stage} among {@code nodes}. */
    public static int ownerOf(int stage, int nodes) {
        if (stage < 0 || nodes < 1) {
            throw new ClusterConfigException("stage " + stage + " or --nodes " + nodes + " is out of range");
        }
        return stage % nodes;
    }
}
