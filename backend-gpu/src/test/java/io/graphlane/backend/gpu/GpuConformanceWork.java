package io.graphlane.backend.gpu;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.graphlane.testkit.conformance.ConformanceWork;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import jcuda.Pointer;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUhostFn;
import jcuda.driver.CUstreamWaitValue_flags;
import jcuda.driver.JCudaDriver;

/**
 * The conformance work of the GPU backend, shared by its conformance tests: a marker is a host
 * function launched on the stream, a gate is a stream wait on a flag in mapped pinned memory that
 * the test writes (blocking no other stream). Also the device the tests open, or the skip that says
 * why there is none.
 */
public final class GpuConformanceWork {
    private static final int CU_MEMHOSTALLOC_DEVICEMAP = 0x02;

    private GpuConformanceWork() {
    }

    /**
     * Opens the test device ({@code -Dgraphlane.gpu.test-device}, default 0), first skipping the test, with the
     * reason, unless every one of {@code needed} (the driver and whatever else the test uses) is present.
     */
    public static GpuBackend openTestDevice(String what, CudaLibrary... needed) {
        assumeTrue(CudaLibraries.isAvailable(CudaLibrary.DRIVER),
                () -> "no CUDA device to run " + what + " on: " + CudaLibraries.unavailableReason(CudaLibrary.DRIVER).orElse(""));
        for (CudaLibrary library : needed) {
            assumeTrue(CudaLibraries.isAvailable(library), () -> what + " needs " + library.sharedObject() + ": "
                    + CudaLibraries.unavailableReason(library).orElse(""));
        }
        return GpuBackend.open(Integer.getInteger("graphlane.gpu.test-device", 0));
    }

    /** The conformance work of {@code gpu}. */
    public static ConformanceWork<GpuWork> of(GpuBackend gpu) {
        return new ConformanceWork<>() {
            @Override
            public GpuWork noop() {
                return GpuWork.NOOP;
            }

            @Override
            public GpuWork failing(RuntimeException cause) {
                return stream -> {
                    throw cause;
                };
            }

            /** False: the poller settles a completion after the device passed its event, while the stream runs on. */
            @Override
            public boolean settlesBeforeSuccessorsStart() {
                return false;
            }

            @Override
            public GpuWork marker(Runnable onReached) {
                CUhostFn fn = userData -> onReached.run();
                return stream -> CudaErrors.check(JCudaDriver.cuLaunchHostFunc(stream.cuStream(), fn, null), "cuLaunchHostFunc", stream.name());
            }

            @Override
            public Gate<GpuWork> gate(String name) {
                gpu.makeCurrent();
                Pointer host = new Pointer();
                CudaErrors.check(JCudaDriver.cuMemHostAlloc(host, 4, CU_MEMHOSTALLOC_DEVICEMAP), "cuMemHostAlloc", name);
                ByteBuffer flag = host.getByteBuffer(0, 4).order(ByteOrder.nativeOrder());
                flag.putInt(0, 0);
                CUdeviceptr device = new CUdeviceptr();
                CudaErrors.check(JCudaDriver.cuMemHostGetDevicePointer(device, host, 0), "cuMemHostGetDevicePointer", name);
                GpuWork wait = stream -> CudaErrors.check(JCudaDriver.cuStreamWaitValue32(stream.cuStream(), device, 1,
                        CUstreamWaitValue_flags.CU_STREAM_WAIT_VALUE_GEQ), "cuStreamWaitValue32", stream.name());
                // The flag stays allocated for the process: a gate may be waited on until the backend stops.
                return Gate.of(wait, () -> flag.putInt(0, 1));
            }
        };
    }

    /** Reads {@code count} floats at {@code pointer} into a new array, after the work that wrote them completed. */
    public static float[] readFloats(GpuBackend gpu, CUdeviceptr pointer, int count) {
        float[] out = new float[count];
        gpu.makeCurrent();
        CudaErrors.check(JCudaDriver.cuMemcpyDtoH(Pointer.to(out), pointer, (long) count * Float.BYTES), "cuMemcpyDtoH", gpu.deviceName());
        return out;
    }
}
