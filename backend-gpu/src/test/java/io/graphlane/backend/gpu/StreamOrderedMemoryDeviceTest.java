package io.graphlane.backend.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.graphlane.core.completion.Outcome;
import java.nio.IntBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import jcuda.driver.JCudaDriver;
import org.bytedeco.cuda.cudart.CUmemPoolHandle_st;
import org.bytedeco.cuda.global.cudart;
import org.bytedeco.javacpp.IntPointer;
import org.bytedeco.javacpp.LongPointer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Stream-ordered device memory on a real device: memory freed behind a use on another lane is not
 * handed to the next allocation before that use has read it, and the default pool carries the
 * configured release threshold. Skipped, with the reason, where there is no CUDA driver or device.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class StreamOrderedMemoryDeviceTest {
    private static final long THRESHOLD = 256L << 20;
    private static final int INTS = 4 << 20;
    private static final long BYTES = (long) INTS * Integer.BYTES;
    private GpuBackend device;

    @BeforeEach
    void open() {
        assumeTrue(CudaLibraries.isAvailable(CudaLibrary.DRIVER), () -> "stream-ordered memory needs a CUDA device: "
                + CudaLibraries.unavailableReason(CudaLibrary.DRIVER).orElse(""));
        device = GpuBackend.open(GpuOptions.DEFAULTS.withDevice(Integer.getInteger("graphlane.gpu.test-device", 0))
                .withMemoryPoolReleaseThreshold(THRESHOLD));
    }

    @AfterEach
    void close() {
        if (device != null) {
            device.close();
        }
    }

    @Test
    void memoryFreedAfterAReadOnAnotherLaneIsNotReusedBeforeThatRead() throws InterruptedException {
        List<GpuStream> lanes = device.forkExecutors(device.rootExecutor(), 2);
        GpuStream writer = lanes.get(0);
        GpuStream reader = lanes.get(1);
        List<PinnedBuffer> copies = new ArrayList<>();
        List<GpuCompletion> reads = new ArrayList<>();
        int rounds = 8;
        for (int round = 0; round < rounds; round++) {
            int value = 1000 + round;
            PinnedBuffer host = PinnedBuffer.allocate(device, BYTES);
            copies.add(host);
            DeviceBuffer buffer = DeviceBuffer.allocate(writer, BYTES);
            GpuCompletion written = device.submit(writer, s -> CudaErrors.check(
                    JCudaDriver.cuMemsetD32Async(buffer.pointer(), value, INTS, s.cuStream()), "cuMemsetD32Async", s.name()));
            device.orderAfter(written, reader);
            GpuCompletion read = device.submit(reader, s -> CudaErrors.check(
                    JCudaDriver.cuMemcpyDtoHAsync(host.pointer(), buffer.pointer(), BYTES, s.cuStream()), "cuMemcpyDtoHAsync", s.name()));
            reads.add(read);
            // The writer frees it behind a wait on the read: the next round's allocation on the writer may reuse
            // the memory, and its memset must not land before this read (the reader lags behind the writer).
            device.retainUntilComplete(writer, read, buffer);
        }
        for (int round = 0; round < rounds; round++) {
            assertEquals(Outcome.SUCCESS, reads.get(round).await());
            IntBuffer ints = copies.get(round).buffer().asIntBuffer();
            for (int i = 0; i < INTS; i += 4099) {
                assertEquals(1000 + round, ints.get(i), "round " + round + ", int " + i);
            }
        }
        copies.forEach(PinnedBuffer::close);
    }

    @Test
    void theDefaultPoolKeepsTheConfiguredReleaseThreshold() {
        assumeTrue(device.runtime().streamOrderedMemory(), device.deviceName() + " has no memory pools");
        assumeTrue(CudaLibraries.isAvailable(CudaLibrary.RUNTIME),
                () -> "JavaCPP's CUDA bindings need the CUDA runtime: " + CudaLibraries.unavailableReason(CudaLibrary.RUNTIME).orElse(""));
        try (IntPointer dev = new IntPointer(1); LongPointer threshold = new LongPointer(1)) {
            assertEquals(0, cudart.cuDeviceGet(dev, device.ordinal()));
            CUmemPoolHandle_st pool = new CUmemPoolHandle_st();
            assertEquals(0, cudart.cuDeviceGetDefaultMemPool(pool, dev.get()));
            assertEquals(0, cudart.cuMemPoolGetAttribute(pool, cudart.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, threshold));
            assertEquals(THRESHOLD, threshold.get());
        }
    }
}
