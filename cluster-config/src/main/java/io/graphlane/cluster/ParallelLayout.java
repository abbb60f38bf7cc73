package io.graphlane.cluster;

import io.graphlane.core.topology.Topology;
import java.util.List;

/**
 * How a cluster's ranks split a model: {@code stages} pipeline stages, each over {@code tensorParallel} shards.
 *
 * <p>Without tensor parallelism ({@code tensorParallel == 1}) stage i runs on rank i mod N ({@link StagePlacement}),
 * so a rank may host several stages or none. With it, every rank holds exactly one shard of one stage and the cluster
 * must have {@code stages × tensorParallel} members: the ranks follow {@link Topology} with pipeline P and tensor T,
 * so rank r holds shard {@code r mod T} of stage {@code r / T}, and the ranks of one stage are consecutive.
 *
 * @param nodes the cluster's member count
 * @param stages the pipeline stages
 * @param tensorParallel the shards of each stage
 */
public record ParallelLayout(int nodes, int stages, int tensorParallel) {

    /** Validates the layout; the error names the option and the expected and found values. */
    public ParallelLayout {
        if (tensorParallel < 1) {
            throw new ClusterConfigException("--tensor-parallel must be >= 1, got " + tensorParallel);
        }
        if (tensorParallel == 1) {
            StagePlacement.stagesOf(0, nodes, stages);
        } else {
            if (stages < 1) {
                throw new ClusterConfigException("--stages must be >= 1, got " + stages);
            }
            if ((long) stages * tensorParallel != nodes) {
                throw new ClusterConfigException("--stages " + stages + " x --tensor-parallel " + tensorParallel + " needs --nodes "
                        + (long) stages * tensorParallel + " (one shard of one stage per node), got --nodes " + nodes);
            }
        }
    }

    /** The layout without tensor parallelism: stage i on rank i mod N. */
    public static ParallelLayout pipeline(int nodes, int stages) {
        return new ParallelLayout(nodes, stages, 1);
    }

    /** The stages rank {@code rank} hosts (or holds a shard of), ascending; possibly none without tensor parallelism. */
    public List<Integer> stagesOf(int rank) {
        if (tensorParallel == 1) {
            return StagePlacement.stagesOf(rank, nodes, stages);
        }
        return List.of(topology().coordinates(checked(rank)).pipeline());
    }

    /** The shard of its stage rank {@code rank} holds: its tensor-parallel rank, 0 without tensor parallelism. */
    public int shardOf(int rank) {
        return tensorParallel == 1 ? 0 : topology().coordinates(checked(rank)).tensor();
    }

    /** The rank that holds shard {@code shard} of stage {@code stage} (the stage's owner when {@code tensorParallel == 1}). */
    public int rankOf(int stage, int shard) {
        if (tensorParallel == 1) {
            return StagePlacement.ownerOf(stage, nodes);
        }
        if (stage < 0 || stage >= stages || shard < 0 || shard >= tensorParallel) {
            throw new ClusterConfigException("shard " + shard + " of stage " + stage + " is outside " + stages + " stages x "
                    + tensorParallel + " shards");
        }
        return topology().rank(new Topology.Coordinates(0, stage, shard, 0));
    }

    private Topology topology() {
        return new Topology(1, stages, tensorParallel, 1);
    }

    private int checked(int rank) {
        if (rank < 0 || rank >= nodes) {
            throw new ClusterConfigException("rank " + rank + " is outside [0, " + nodes + ") for --nodes " + nodes);
        }
        return rank;
    }
}
