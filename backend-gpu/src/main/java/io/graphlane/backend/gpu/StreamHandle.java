package io.graphlane.backend.gpu;

import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUstream;

/** The device side of one executor: a stream that can wait on events, record them, and order allocations. */
interface StreamHandle {

    /** Makes work enqueued on this stream from now on wait for {@code event}, without blocking the caller. */
    void waitFor(EventHandle event);

    /** Records a new event after everything enqueued so far. */
    EventHandle record();

    /**
     * Allocates {@code bytes} from the device's memory pool in this stream's order ({@code cuMemAllocAsync}):
     * usable by work enqueued on this stream from now on, and by other streams only once ordered after it.
     * Only on a device with {@link DeviceRuntime#streamOrderedMemory()}.
     */
    CUdeviceptr allocate(long bytes);

    /**
     * Returns {@code pointer} to the device's memory pool when this stream reaches this point
     * ({@code cuMemFreeAsync}): after everything enqueued on it so far. Never blocks the caller.
     * Only on a device with {@link DeviceRuntime#streamOrderedMemory()}.
     */
    void free(CUdeviceptr pointer);

    /** The JCuda stream, for work that enqueues kernels, copies or library calls on it. */
    CUstream cuStream();

    /** Releases the stream; the device lets work already enqueued on it finish. */
    void destroy();
}
