package io.graphlane.backend.gpu;

import jcuda.driver.CUcontext;
import jcuda.driver.CUdevice;
import jcuda.driver.CUevent;
import jcuda.driver.CUevent_flags;
import jcuda.driver.CUstream;
import jcuda.driver.CUstream_flags;
import jcuda.driver.JCudaDriver;

/**
 * One CUDA device through JCuda's driver API, on the device's primary context (the one the
 * CUDA runtime, cuBLAS and NCCL also use), so every library sees the same memory and streams.
 */
final class CudaDeviceRuntime implements DeviceRuntime {
    private final int ordinal;
    private final String name;
    private final CUdevice device = new CUdevice();
    private final CUcontext context = new CUcontext();

    CudaDeviceRuntime(int ordinal) {
        CudaLibraries.require(CudaLibrary.DRIVER);
        this.ordinal = ordinal;
        this.name = "cuda" + ordinal;
        CudaErrors.check(JCudaDriver.cuDeviceGet(device, ordinal), "cuDeviceGet", name);
        CudaErrors.check(JCudaDriver.cuDevicePrimaryCtxRetain(context, device), "cuDevicePrimaryCtxRetain", name);
        makeCurrent();
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public int ordinal() {
        return ordinal;
    }

    @Override
    public void makeCurrent() {
        CudaErrors.check(JCudaDriver.cuCtxSetCurrent(context), "cuCtxSetCurrent", name);
    }

    @Override
    public StreamHandle createStream(String streamName) {
        makeCurrent();
        CUstream stream = new CUstream();
        CudaErrors.check(JCudaDriver.cuStreamCreate(stream, CUstream_flags.CU_STREAM_NON_BLOCKING), "cuStreamCreate", streamName);
        return new CudaStream(stream, streamName);
    }

    @Override
    public void close() {
        CudaErrors.check(JCudaDriver.cuDevicePrimaryCtxRelease(device), "cuDevicePrimaryCtxRelease", name);
    }

    /** A non-blocking CUDA stream. */
    private static final class CudaStream implements StreamHandle {
        private final CUstream stream;
        private final String name;

        CudaStream(CUstream stream, String name) {
            this.stream = stream;
            this.name = name;
        }

        @Override
        public void waitFor(EventHandle event) {
            CudaErrors.check(JCudaDriver.cuStreamWaitEvent(stream, ((CudaEvent) event).event, 0), "cuStreamWaitEvent", name);
        }

        @Override
        public EventHandle record() {
            CUevent event = new CUevent();
            CudaErrors.check(JCudaDriver.cuEventCreate(event, CUevent_flags.CU_EVENT_DISABLE_TIMING), "cuEventCreate", name);
            int recorded = JCudaDriver.cuEventRecord(event, stream);
            if (recorded != jcuda.driver.CUresult.CUDA_SUCCESS) {
                JCudaDriver.cuEventDestroy(event);
                throw new CudaException(name, "cuEventRecord", recorded);
            }
            return new CudaEvent(event);
        }

        @Override
        public CUstream cuStream() {
            return stream;
        }

        @Override
        public void destroy() {
            CudaErrors.check(JCudaDriver.cuStreamDestroy(stream), "cuStreamDestroy", name);
        }
    }

    /** An event created without timing, the cheapest kind to record and query. */
    private record CudaEvent(CUevent event) implements EventHandle {
        @Override
        public int query() {
            return JCudaDriver.cuEventQuery(event);
        }

        @Override
        public void destroy() {
            JCudaDriver.cuEventDestroy(event);
        }
    }
}
