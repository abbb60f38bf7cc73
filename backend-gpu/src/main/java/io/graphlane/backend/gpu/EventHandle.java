package io.graphlane.backend.gpu;

/** A device event recorded on a stream after some work; queried by the device's poller only. */
interface EventHandle {

    /** CUDA_SUCCESS once the work before the event finished, CUDA_ERROR_NOT_READY while it runs, else the CUDA error. */
    int query();

    /** Frees the event; called once, after {@link #query()} stopped returning not-ready. */
    void destroy();
}
