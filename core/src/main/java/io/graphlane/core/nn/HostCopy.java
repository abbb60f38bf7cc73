package io.graphlane.core.nn;

/**
 * A tensor's values on their way to the host, started by {@link NeuralOps#copyToHost} inside lane
 * work. A CPU copy is readable at once; a device copy becomes readable at the exact completion of
 * the lane work that started it, and its values are read only after that completion.
 */
public interface HostCopy extends AutoCloseable {

    /** True when the values can be read now, before the lane work that started the copy has completed. */
    boolean readableNow();

    /** The number of rows copied. */
    int rows();

    /** The number of columns copied. */
    int cols();

    /**
     * The values, row-major ({@code rows · cols} floats), in a new array; call it only once
     * {@link #readableNow} holds or the lane work that started the copy has completed successfully.
     *
     * @throws IllegalStateException if the copy was closed
     */
    float[] values();

    /** Frees what the copy holds (pinned host memory on a device); idempotent. */
    @Override
    void close();

    /** A copy of values already on the host. */
    static HostCopy ofHost(float[] values, int rows, int cols) {
        if ((long) rows * cols != values.length) {
            throw new ShapeMismatchException("copyToHost", "values", rows * (long) cols + " floats (" + rows + " x " + cols + ")",
                    values.length + " floats");
        }
        return new HostCopy() {
            @Override
            public boolean readableNow() {
                return true;
            }

            @Override
            public int rows() {
                return rows;
            }

            @Override
            public int cols() {
                return cols;
            }

            @Override
            public float[] values() {
                return values.clone();
            }

            @Override
            public void close() {
                // heap values: nothing to free
            }
        };
    }
}
