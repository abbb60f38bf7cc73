package io.graphlane.backend.gpu;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.graphlane.core.backend.SubmissionBackend;
import io.graphlane.testkit.conformance.ConformanceWork;
import io.graphlane.testkit.conformance.SubmissionConformanceSuite;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import jcuda.Pointer;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUhostFn;
import jcuda.driver.CUstreamWaitValue_flags;
import jcuda.driver.JCudaDriver;

/**
 * The submission laws on a real CUDA device: a marker is a host function launched on the stream,
 * a gate is a stream wait on a flag in mapped pinned memory that the test writes (blocking no
 * other stream). Skipped, with the reason, where no CUDA driver or device is present.
 */
class GpuSubmissionConformanceTest extends SubmissionConformanceSuite<GpuStream, GpuCompletion, GpuWork> {
    private static final int CU_MEMHOSTALLOC_DEVICEMAP = 0x02;

    @Override
    protected SubmissionBackend<GpuStream, GpuCompletion, GpuWork> createBackend() {
        assumeTrue(CudaLibraries.isAvailable(CudaLibrary.DRIVER),
                () -> "no CUDA device to run the GPU conformance suite on: " + CudaLibraries.unavailableReason(CudaLibrary.DRIVER).orElse(""));
        return GpuBackend.open(Integer.getInteger("graphlane.gpu.test-device", 0));
    }

    @Override
    protected ConformanceWork<GpuWork> workFor(SubmissionBackend<GpuStream, GpuCompletion, GpuWork> backend) {
        GpuBackend gpu = (GpuBackend) backend;
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
}
