package io.graphlane.core.backend;

import io.graphlane.core.completion.Completion;

/**
 * Collective operations over a group of members. Every member calls the same collectives
 * in the same order; a member with nothing to send still takes part. Before any payload
 * moves the members agree on a descriptor, and a mismatch fails every member with an
 * error naming the first member that differs. An operation the backend lacks throws
 * {@link AbsentCapabilityException}.
 *
 * @param <E> the executor the collective is ordered on
 * @param <T> the backend-native tensor
 * @param <G> the backend-native group
 */
public interface CollectiveBackend<E, T, G> {

    /** A collective's result value, readable once {@link #completion()} succeeded. */
    interface Result<T> {
        T value();

        Completion completion();
    }

    /** Sums {@code value} element-wise across the group. */
    Result<T> allReduce(T value, G group, E executor);

    /** Concatenates every member's {@code value} along the first axis, in member order. */
    Result<T> allGather(T value, G group, E executor);

    /** Sends the i-th partition of {@code value} to member i and gathers what every member sent here. */
    Result<T> allToAll(T value, G group, E executor);

    /**
     * Sends the next {@code sendCounts[i]} rows of {@code value} (in member order) to member i and
     * gathers, in member order, the rows every member sent here; a count may be zero, and a member
     * with no rows at all still takes part. A backend without variable counts throws
     * {@link AbsentCapabilityException} before anything is queued.
     */
    default Result<T> allToAll(T value, int[] sendCounts, G group, E executor) {
        throw new AbsentCapabilityException(getClass().getSimpleName(), "all-to-all with variable counts");
    }
}
