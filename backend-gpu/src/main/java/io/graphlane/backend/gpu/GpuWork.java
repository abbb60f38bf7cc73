package io.graphlane.backend.gpu;

/**
 * One item of GPU work: enqueues kernels, copies or library calls on the given stream and
 * returns without waiting for them. A thrown exception fails its submission once the work
 * already enqueued before the throw has finished on the device.
 */
@FunctionalInterface
public interface GpuWork {

    /** Enqueues this work on {@code stream}; must not block on the device. */
    void enqueue(GpuStream stream);

    /** Work that enqueues nothing. */
    GpuWork NOOP = stream -> { };
}
