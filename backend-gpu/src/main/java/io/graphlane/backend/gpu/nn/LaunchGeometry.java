package io.graphlane.backend.gpu.nn;

/**
 * Grid sizes for the kernels: element-wise kernels use grid-stride loops over at most
 * {@link #MAX_GRID} blocks; row-wise kernels use one block per row.
 */
public final class LaunchGeometry {
    /** The most blocks an element-wise kernel launches; the grid-stride loop covers the rest. */
    public static final int MAX_GRID = 65_535;

    private LaunchGeometry() {
    }

    /** Blocks for {@code elements} items at {@code block} threads each: ceil(elements / block), at least 1, at most {@link #MAX_GRID}. */
    public static int elementwiseGrid(long elements, int block) {
        if (elements < 0 || block <= 0) {
            throw new IllegalArgumentException("launch geometry: elements must be >= 0 and block > 0, got " + elements + " and " + block);
        }
        long blocks = (elements + block - 1) / block;
        return (int) Math.max(1, Math.min(MAX_GRID, blocks));
    }

    /** Dynamic shared memory of the attention kernel: one float score per attended position, refused above {@code limitBytes}. */
    public static int attentionSharedBytes(int maxPosition, int limitBytes) {
        long bytes = ((long) maxPosition + 1) * Float.BYTES;
        if (maxPosition < 0 || bytes > limitBytes) {
            throw new IllegalArgumentException("attention over " + ((long) maxPosition + 1) + " positions needs " + bytes
                    + " bytes of shared memory per block; the device allows " + limitBytes);
        }
        return (int) bytes;
    }
}
