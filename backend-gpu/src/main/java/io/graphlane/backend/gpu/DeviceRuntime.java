package io.graphlane.backend.gpu;

/**
 * The device-side primitives the submission machinery needs from one device: streams that
 * record and wait on events, and a context that can be made current on a thread. The CUDA
 * implementation is {@link CudaDeviceRuntime}.
 */
interface DeviceRuntime {

    /** The device's name, such as {@code cuda0}. */
    String name();

    /** The ordinal the driver gives this device (after CUDA_VISIBLE_DEVICES). */
    int ordinal();

    /** Makes this device's context current on the calling thread. */
    void makeCurrent();

    /** Creates a stream that does not synchronize with the legacy default stream. */
    StreamHandle createStream(String name);

    /** Releases the device's context; called once, after every stream was destroyed. */
    void close();
}
