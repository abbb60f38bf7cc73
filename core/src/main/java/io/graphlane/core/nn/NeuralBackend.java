package io.graphlane.core.nn;

/**
 * A backend that runs {@link NeuralOps} on its lanes.
 *
 * @param <E> the backend-native executor (a lane)
 * @param <T> the backend-native tensor
 */
public interface NeuralBackend<E, T> {

    /** The operations issued on {@code executor}, in call order; call them only from work running on that lane. */
    NeuralOps<T> ops(E executor);
}
