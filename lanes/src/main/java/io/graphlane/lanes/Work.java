package io.graphlane.lanes;

/**
 * What one node of a {@link LaneFlow} computes, on its lane's worker thread. It reads its producers' values from
 * {@code in} and returns its own value (null when it has none), which its consumers receive. A thrown exception fails
 * the node, and every node that runs after it is not run; the failure names the node and its lane.
 *
 * @param <T> the node's value
 */
@FunctionalInterface
public interface Work<T> {
    T run(Inputs in) throws Exception;
}
