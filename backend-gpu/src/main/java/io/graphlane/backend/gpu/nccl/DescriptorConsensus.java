package io.graphlane.backend.gpu.nccl;

/**
 * The hook a communicator calls before every collective: it returns once every member proposed
 * an identical descriptor, and throws {@link CollectiveMismatchException} on every member
 * otherwise. Across processes and nodes, cluster-config's {@code NcclControlPlane} implements it over
 * the cluster; {@link InProcessConsensus} serves ranks that share a JVM.
 */
@FunctionalInterface
public interface DescriptorConsensus {

    /** Agrees on {@code mine} for {@code rank}; blocks the calling (non-actor) thread until every member has proposed. */
    void agree(int rank, CollectiveDescriptor mine) throws InterruptedException;

    /** The consensus of a group of one: always agrees. */
    DescriptorConsensus SINGLE = (rank, mine) -> { };
}
