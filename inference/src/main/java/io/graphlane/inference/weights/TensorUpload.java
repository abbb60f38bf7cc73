package io.graphlane.inference.weights;

import io.graphlane.core.nn.NeuralOps;
import java.nio.FloatBuffer;

/**
 * Makes a backend tensor from F32 values on the host, so a loader can hand a checkpoint's bytes
 * to any backend.
 *
 * @param <T> the backend tensor
 */
@FunctionalInterface
public interface TensorUpload<T> {

    /** A new {@code rows × cols} tensor, owned by the caller, holding a copy of {@code values}' remaining floats. */
    T upload(FloatBuffer values, int rows, int cols);

    /** An upload through {@link NeuralOps#fromHost}, via a heap array; a backend with a direct path should use it instead. */
    static <T> TensorUpload<T> viaHeap(NeuralOps<T> ops) {
        return (values, rows, cols) -> {
            float[] copy = new float[values.remaining()];
            values.duplicate().get(copy);
            return ops.fromHost(copy, rows, cols);
        };
    }
}
