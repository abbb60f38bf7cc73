package io.graphlane.backend.gpu;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.bytedeco.cuda.cudart.CUmemPoolHandle_st;
import org.bytedeco.cuda.global.cudart;
import org.bytedeco.javacpp.IntPointer;
import org.bytedeco.javacpp.LongPointer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Sets the release threshold of a device's default memory pool: how much freed memory the pool keeps
 * reserved for the next allocations instead of handing it back to the driver at the next stream,
 * event or context synchronization. JCuda 12.6 has no binding for {@code cuDeviceGetDefaultMemPool}
 * or {@code cuMemPoolSetAttribute}, so this goes through JavaCPP's CUDA bindings (the ones NCCL
 * uses), which also need the CUDA runtime ({@link CudaLibrary#RUNTIME}). Where they do not load, or the driver refuses,
 * allocation stays stream ordered with CUDA's default threshold (0), and that is logged once per device.
 */
final class DefaultMemoryPool {
    private static final Logger LOG = LoggerFactory.getLogger(DefaultMemoryPool.class);
    private static final Set<Integer> UNSET_LOGGED = ConcurrentHashMap.newKeySet();

    private DefaultMemoryPool() {
    }

    /** Sets {@code CU_MEMPOOL_ATTR_RELEASE_THRESHOLD} of device {@code ordinal}'s default pool to {@code bytes}. */
    static void setReleaseThreshold(int ordinal, String deviceName, long bytes) {
        try {
            CudaLibraries.require(CudaLibrary.RUNTIME);
        } catch (GpuUnavailableException e) {
            if (UNSET_LOGGED.add(ordinal)) {
                LOG.warn("{}: graphlane.gpu.memory-pool-release-threshold not applied ({}); allocation stays stream-ordered, but freed"
                        + " device memory goes back to the driver at every synchronization", deviceName, e.getMessage());
            }
            return;
        }
        try (IntPointer device = new IntPointer(1); LongPointer threshold = new LongPointer(1)) {
            CudaErrors.check(cudart.cuDeviceGet(device, ordinal), "cuDeviceGet", deviceName);
            CUmemPoolHandle_st pool = new CUmemPoolHandle_st();
            CudaErrors.check(cudart.cuDeviceGetDefaultMemPool(pool, device.get()), "cuDeviceGetDefaultMemPool", deviceName);
            threshold.put(bytes);
            CudaErrors.check(cudart.cuMemPoolSetAttribute(pool, cudart.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, threshold),
                    "cuMemPoolSetAttribute(CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, " + bytes + ")", deviceName);
            LOG.debug("{}: the default memory pool keeps up to {} freed bytes for reuse", deviceName, bytes);
        } catch (LinkageError | CudaException e) {
            if (UNSET_LOGGED.add(ordinal)) {
                String why = String.valueOf(e.getMessage()).lines().findFirst().orElse(e.getClass().getName());
                LOG.warn("{}: graphlane.gpu.memory-pool-release-threshold not applied ({}{}); allocation stays stream-ordered, but freed"
                        + " device memory goes back to the driver at every synchronization", deviceName,
                        e instanceof LinkageError ? "JavaCPP's CUDA bindings did not load: " : "", why);
            }
        }
    }
}
