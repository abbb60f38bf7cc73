package io.graphlane.backend.gpu;

import jcuda.driver.CUdeviceptr;

/**
 * The device-side primitives the submission machinery needs from one device: streams that
 * record and wait on events, a context that can be made current on a thread, and device
 * memory. The CUDA implementation is {@link CudaDeviceRuntime}.
 */
interface DeviceRuntime {

    /** This runtime's name, unique in the process: {@code cuda0}, or {@code cuda0#2} for a second runtime on device 0. */
    String name();

    /** The ordinal the driver gives this device (after CUDA_VISIBLE_DEVICES). */
    int ordinal();

    /** Makes this device's context current on the calling thread. */
    void makeCurrent();

    /** Creates a stream that does not synchronize with the legacy default stream. */
    StreamHandle createStream(String name);

    /**
     * True when the device has memory pools: memory is then allocated and freed in stream order
     * ({@link StreamHandle#allocate}, {@link StreamHandle#free}). False on devices without them,
     * where only {@link #allocate} and {@link #free} may be used.
     */
    boolean streamOrderedMemory();

    /** Allocates {@code bytes} at once ({@code cuMemAlloc}); for devices without memory pools. */
    CUdeviceptr allocate(long bytes);

    /**
     * Frees memory whose allocation was reached and whose every use is proven finished, on no stream
     * of the backend: with memory pools in stream order on the calling thread's default stream (the
     * host never waits), without them by {@code cuMemFree} (which waits for the whole device).
     */
    void free(CUdeviceptr pointer);

    /** Ends this runtime's use of the device; called once, after every stream was destroyed (CUDA keeps the primary context). */
    void close();
}
