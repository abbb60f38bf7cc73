package io.graphlane.backend.gpu;

import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import jcuda.driver.CUcontext;
import jcuda.driver.CUdevice;
import jcuda.driver.CUdevice_attribute;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUevent;
import jcuda.driver.CUevent_flags;
import jcuda.driver.CUstream;
import jcuda.driver.CUstream_flags;
import jcuda.driver.JCudaDriver;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One CUDA device through JCuda's driver API, on the device's primary context (the one the
 * CUDA runtime, cuBLAS and NCCL also use), so every library sees the same memory and streams.
 *
 * <p>The primary context of a device is retained once per process, by the first runtime opened on it,
 * and held until the process exits: closing a backend never tears the context down under pinned or
 * device memory that other backends of the process, or code that outlives the backend, still use.
 * Each runtime has its own name: {@code cuda0} for the first opened on device 0, then {@code cuda0#2},
 * {@code cuda0#3}, ..., so two backends on one device are never mistaken for each other.
 *
 * <p>Device memory comes from CUDA's stream-ordered allocator ({@code cuMemAllocAsync},
 * {@code cuMemFreeAsync}) on the device's current memory pool, which is its default pool unless
 * the embedding application replaced it; the default pool's release threshold is set from
 * {@link GpuOptions#memoryPoolReleaseThresholdBytes()}. A device without memory pools
 * ({@code CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED} = 0) falls back to {@code cuMemAlloc} and
 * {@code cuMemFree}, which waits for the whole device; that is logged once per device.
 */
final class CudaDeviceRuntime implements DeviceRuntime {
    private static final Logger LOG = LoggerFactory.getLogger(CudaDeviceRuntime.class);
    /** The ordinals whose fallback to synchronous memory was already logged. */
    private static final Set<Integer> FALLBACK_LOGGED = ConcurrentHashMap.newKeySet();
    /** The primary context of each device ordinal, retained once per process and never released. */
    private static final Map<Integer, CUcontext> PRIMARY_CONTEXTS = new HashMap<>();
    /** How many runtimes were opened on each ordinal so far, for their names. */
    private static final Map<Integer, AtomicInteger> OPENED = new ConcurrentHashMap<>();

    private final int ordinal;
    private final String name;
    private final CUdevice device = new CUdevice();
    private final CUcontext context;
    private final boolean streamOrderedMemory;

    CudaDeviceRuntime(int ordinal, long memoryPoolReleaseThresholdBytes) {
        CudaLibraries.require(CudaLibrary.DRIVER);
        this.ordinal = ordinal;
        this.name = instanceName(ordinal, OPENED.computeIfAbsent(ordinal, o -> new AtomicInteger()).incrementAndGet());
        CudaErrors.check(JCudaDriver.cuDeviceGet(device, ordinal), "cuDeviceGet", name);
        this.context = primaryContext(ordinal, device, name);
        makeCurrent();
        this.streamOrderedMemory = memoryPoolsSupported();
        if (streamOrderedMemory) {
            DefaultMemoryPool.setReleaseThreshold(ordinal, name, memoryPoolReleaseThresholdBytes);
        } else if (FALLBACK_LOGGED.add(ordinal)) {
            LOG.warn("{} has no memory pools (CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED = 0): device memory is allocated with"
                    + " cuMemAlloc and freed with cuMemFree, which waits for the whole device at every free", name);
        }
    }

    /** {@code cuda<ordinal>} for the first runtime on a device, {@code cuda<ordinal>#<n>} for the n-th. */
    static String instanceName(int ordinal, int n) {
        return n == 1 ? "cuda" + ordinal : "cuda" + ordinal + "#" + n;
    }

    /** The device's primary context, retained by the first call of the process for that ordinal. */
    private static CUcontext primaryContext(int ordinal, CUdevice device, String name) {
        synchronized (PRIMARY_CONTEXTS) {
            CUcontext context = PRIMARY_CONTEXTS.get(ordinal);
            if (context == null) {
                context = new CUcontext();
                CudaErrors.check(JCudaDriver.cuDevicePrimaryCtxRetain(context, device), "cuDevicePrimaryCtxRetain", name);
                PRIMARY_CONTEXTS.put(ordinal, context);
            }
            return context;
        }
    }

    private boolean memoryPoolsSupported() {
        int[] supported = new int[1];
        CudaErrors.check(JCudaDriver.cuDeviceGetAttribute(supported, CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, device),
                "cuDeviceGetAttribute(CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED)", name);
        return supported[0] != 0;
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
    public boolean streamOrderedMemory() {
        return streamOrderedMemory;
    }

    @Override
    public CUdeviceptr allocate(long bytes) {
        CUdeviceptr pointer = new CUdeviceptr();
        CudaErrors.check(JCudaDriver.cuMemAlloc(pointer, Math.max(1, bytes)), "cuMemAlloc(" + bytes + " bytes)", name);
        return pointer;
    }

    @Override
    public void free(CUdeviceptr pointer) {
        if (streamOrderedMemory) {
            CudaErrors.check(JCudaDriver.cuMemFreeAsync(pointer, JCudaDriver.CU_STREAM_PER_THREAD), "cuMemFreeAsync", name);
        } else {
            CudaErrors.check(JCudaDriver.cuMemFree(pointer), "cuMemFree", name);
        }
    }

    /** Nothing to release: the primary context stays retained for the rest of the process (see the class comment). */
    @Override
    public void close() {
        LOG.debug("{} closed; the primary context of device {} stays retained until the process exits", name, ordinal);
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
        public CUdeviceptr allocate(long bytes) {
            CUdeviceptr pointer = new CUdeviceptr();
            CudaErrors.check(JCudaDriver.cuMemAllocAsync(pointer, Math.max(1, bytes), stream), "cuMemAllocAsync(" + bytes + " bytes)", name);
            return pointer;
        }

        @Override
        public void free(CUdeviceptr pointer) {
            CudaErrors.check(JCudaDriver.cuMemFreeAsync(pointer, stream), "cuMemFreeAsync", name);
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
