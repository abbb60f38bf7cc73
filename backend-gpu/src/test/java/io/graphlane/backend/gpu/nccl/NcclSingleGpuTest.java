package io.graphlane.backend.gpu.nccl;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.graphlane.backend.gpu.CudaLibraries;
import io.graphlane.backend.gpu.CudaLibrary;
import io.graphlane.backend.gpu.GpuBackend;
import io.graphlane.backend.gpu.nn.GpuMatrix;
import io.graphlane.backend.gpu.nn.GpuNeuralBackend;
import io.graphlane.core.backend.CollectiveBackend;
import io.graphlane.core.nn.NeuralOps;
import org.junit.jupiter.api.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * NCCL on one GPU (a group of one): the collectives return their input, and a 64 MiB all-reduce
 * reports its bandwidth. Skipped, with the reason, without a device or libnccl.so.2.
 */
class NcclSingleGpuTest {
    private static final Logger LOG = LoggerFactory.getLogger(NcclSingleGpuTest.class);

    @Test
    void collectivesOfAGroupOfOneReturnTheInputAndAllReduceReportsBandwidth() throws Exception {
        for (CudaLibrary library : CudaLibrary.values()) {
            assumeTrue(CudaLibraries.isAvailable(library), () -> "NCCL on a GPU needs " + library.sharedObject() + ": "
                    + CudaLibraries.unavailableReason(library).orElse(""));
        }
        try (GpuBackend device = GpuBackend.open(Integer.getInteger("graphlane.gpu.test-device", 0));
             GpuNeuralBackend neural = GpuNeuralBackend.create(device);
             NcclCommunicator comm = NcclCommunicator.create(device, NcclUniqueIds.generate(), 1, 0, DescriptorConsensus.SINGLE)) {
            NeuralOps<GpuMatrix> ops = neural.ops(device.rootExecutor());
            float[] data = new float[4 * 6];
            for (int i = 0; i < data.length; i++) {
                data[i] = i * 0.5f;
            }
            GpuMatrix x = ops.fromHost(data, 4, 6);
            GpuCollectives collectives = new GpuCollectives();
            for (CollectiveBackend.Result<GpuMatrix> r : java.util.List.of(collectives.allReduce(x, comm, device.rootExecutor()),
                    collectives.allGather(x, comm, device.rootExecutor()), collectives.allToAll(x, comm, device.rootExecutor()))) {
                r.completion().awaitSuccess();
                float[] out = new float[data.length];
                ops.toHost(r.value(), out);
                assertArrayEquals(data, out);
            }

            int floats = 16 << 20; // 64 MiB
            GpuMatrix big = ops.allocate(floats / 1024, 1024);
            collectives.allReduce(big, comm, device.rootExecutor()).completion().awaitSuccess(); // warm-up
            int iterations = 20;
            long start = System.nanoTime();
            CollectiveBackend.Result<GpuMatrix> last = null;
            for (int i = 0; i < iterations; i++) {
                last = collectives.allReduce(big, comm, device.rootExecutor());
            }
            last.completion().awaitSuccess();
            double seconds = (System.nanoTime() - start) / 1e9 / iterations;
            double algbw = (double) floats * Float.BYTES / seconds / 1e9;
            int ranks = comm.size();
            double busbw = algbw * 2.0 * (ranks - 1) / ranks;
            LOG.info("NCCL all-reduce 64 MiB on 1 GPU: {} us, algbw {} GB/s, busbw {} GB/s (busbw = algbw x 2(n-1)/n, 0 for n = 1)",
                    String.format("%.1f", seconds * 1e6), String.format("%.1f", algbw), String.format("%.1f", busbw));
            System.out.printf("GPUCHECK nccl-allreduce-64MiB time_us=%.1f algbw_GBps=%.1f busbw_GBps=%.1f ranks=%d%n",
                    seconds * 1e6, algbw, busbw, ranks);
            assertTrue(seconds > 0);
            assertEquals(1, ranks);
        }
    }
}
