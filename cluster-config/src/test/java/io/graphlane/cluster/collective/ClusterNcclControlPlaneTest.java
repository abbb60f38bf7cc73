package io.graphlane.cluster.collective;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.graphlane.backend.cpu.collective.CollectiveSettings;
import io.graphlane.backend.gpu.CudaLibraries;
import io.graphlane.backend.gpu.CudaLibrary;
import io.graphlane.backend.gpu.GpuBackend;
import io.graphlane.backend.gpu.nccl.CollectiveDescriptor;
import io.graphlane.backend.gpu.nccl.CollectiveMismatchException;
import io.graphlane.backend.gpu.nccl.GpuCollectives;
import io.graphlane.backend.gpu.nccl.NcclCommunicator;
import io.graphlane.backend.gpu.nccl.NcclUniqueIds;
import io.graphlane.backend.gpu.nn.GpuMatrix;
import io.graphlane.backend.gpu.nn.GpuNeuralBackend;
import io.graphlane.core.backend.CollectiveBackend;
import io.graphlane.core.nn.NeuralOps;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.typed.ActorSystem;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * NCCL's control plane across the nodes of a cluster: three nodes (actor systems joined over Artery on loopback), one
 * rank each. Rank 0's id reaches the others through the cluster and descriptor consensus fails every rank naming the
 * same one. On a host with CUDA and NCCL, a group joined through the cluster also creates a communicator and runs an
 * all-reduce on the GPU; without them that test is skipped, naming the missing library.
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class ClusterNcclControlPlaneTest {
    private static final CollectiveSettings SETTINGS = CollectiveSettings.defaults();
    private static List<ActorSystem<Void>> nodes;

    @BeforeAll
    static void formCluster() throws Exception {
        nodes = CollectiveNodes.cluster(3);
    }

    @AfterAll
    static void stopCluster() throws Exception {
        CollectiveNodes.terminate(nodes);
    }

    private static List<NcclControlPlane> join(String group, int size) throws Exception {
        List<CompletableFuture<NcclControlPlane>> joining = new ArrayList<>();
        for (int r = 0; r < size; r++) {
            joining.add(NcclControlPlane.join(nodes.get(r), group, r, size, SETTINGS).toCompletableFuture());
        }
        List<NcclControlPlane> planes = new ArrayList<>();
        for (CompletableFuture<NcclControlPlane> j : joining) {
            planes.add(j.get(30, TimeUnit.SECONDS));
        }
        return planes;
    }

    private static void closeAll(List<NcclControlPlane> planes) throws Exception {
        List<CompletableFuture<Void>> closing = new ArrayList<>();
        for (NcclControlPlane p : planes) {
            closing.add(CompletableFuture.runAsync(p::close));
        }
        CompletableFuture.allOf(closing.toArray(CompletableFuture[]::new)).get(60, TimeUnit.SECONDS);
    }

    @Test
    void rankZerosIdReachesEveryNodeAndDescriptorsAgreeOrFailEveryRankNamingTheSameRank() throws Exception {
        List<NcclControlPlane> planes = join("ids", 3);
        try {
            byte[] id = new byte[NcclUniqueIds.BYTES];
            for (int i = 0; i < id.length; i++) {
                id[i] = (byte) (255 - i);
            }
            List<CompletableFuture<byte[]>> shared = new ArrayList<>();
            for (NcclControlPlane p : planes) {
                shared.add(CompletableFuture.supplyAsync(() -> p.shareUniqueId(id::clone)));
            }
            for (int r = 0; r < 3; r++) {
                assertArrayEquals(id, shared.get(r).get(30, TimeUnit.SECONDS), "the id on rank " + r);
            }

            List<CompletableFuture<Void>> agreed = new ArrayList<>();
            for (NcclControlPlane p : planes) {
                agreed.add(CompletableFuture.runAsync(() -> p.agree(p.rank(), new CollectiveDescriptor(0, "allReduce", "F32", 8, 1024))));
            }
            CompletableFuture.allOf(agreed.toArray(CompletableFuture[]::new)).get(30, TimeUnit.SECONDS);

            List<CompletableFuture<Void>> differing = new ArrayList<>();
            for (NcclControlPlane p : planes) {
                int rows = p.rank() == 1 ? 9 : 8;
                differing.add(CompletableFuture.runAsync(() -> p.agree(p.rank(), new CollectiveDescriptor(1, "allReduce", "F32", rows, 1024))));
            }
            for (int r = 0; r < 3; r++) {
                int rank = r;
                Throwable cause = assertThrows(ExecutionException.class, () -> differing.get(rank).get(30, TimeUnit.SECONDS)).getCause();
                CollectiveMismatchException e = assertInstanceOf(CollectiveMismatchException.class, cause, "rank " + r);
                assertTrue(e.getMessage().contains("rank 1") && e.getMessage().contains("[9 x 1024]"), e.getMessage());
            }
        } finally {
            closeAll(planes);
        }
    }

    @Test
    void aGroupJoinedThroughTheClusterRunsAnAllReduceOnTheGpu() throws Exception {
        for (CudaLibrary library : CudaLibrary.values()) {
            assumeTrue(CudaLibraries.isAvailable(library), () -> "NCCL on a GPU needs " + library.sharedObject() + ": "
                    + CudaLibraries.unavailableReason(library).orElse(""));
        }
        // One GPU per rank: a host with one device holds a group of one, still bootstrapped through the cluster.
        List<NcclControlPlane> planes = join("gpu", 1);
        try (GpuBackend device = GpuBackend.open(Integer.getInteger("graphlane.gpu.test-device", 0));
             GpuNeuralBackend neural = GpuNeuralBackend.create(device);
             NcclCommunicator comm = planes.get(0).communicator(device)) {
            NeuralOps<GpuMatrix> ops = neural.ops(device.rootExecutor());
            float[] data = {1, 2, 3, 4, 5, 6};
            GpuMatrix x = ops.fromHost(data, 2, 3);
            CollectiveBackend.Result<GpuMatrix> sum = new GpuCollectives().allReduce(x, comm, device.rootExecutor());
            sum.completion().awaitSuccess();
            float[] out = new float[data.length];
            ops.toHost(sum.value(), out);
            assertArrayEquals(data, out);
            assertEquals(1, comm.size());
        } finally {
            closeAll(planes);
        }
    }
}
