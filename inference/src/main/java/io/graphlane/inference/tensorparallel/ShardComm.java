package io.graphlane.inference.tensorparallel;

/**
 * The collectives a tensor-parallel shard needs, called by the works of the rank's collective lane
 * ({@link CollectiveShard}) in the same order on every rank; {@link #leave} is called by any of the rank's works that
 * fails.
 *
 * @param <T> the backend tensor
 */
public interface ShardComm<T> {

    /** This shard's rank. */
    int rank();

    /** Sums {@code tensor} element-wise over the ranks, in place. */
    void allReduceSum(T tensor);

    /** Every rank's rows concatenated in rank order, as a new tensor owned by the caller. */
    T allGather(T tensor);

    /** Leaves the group for {@code cause}, so the other ranks fail naming this one instead of waiting. */
    void leave(Throwable cause);
}
