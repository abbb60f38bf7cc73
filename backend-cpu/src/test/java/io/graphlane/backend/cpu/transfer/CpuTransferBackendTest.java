package io.graphlane.backend.cpu.transfer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.backend.cpu.CpuBackend;
import io.graphlane.backend.cpu.CpuCompletion;
import io.graphlane.backend.cpu.CpuExecutor;
import io.graphlane.backend.cpu.param.CpuStorage;
import io.graphlane.backend.cpu.param.CpuWeight;
import io.graphlane.core.completion.PoisonedPreconditionException;
import io.graphlane.core.tensor.DType;
import io.graphlane.core.tensor.TensorSpec;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * What the CPU transfer backend adds to the laws of {@link CpuTransferConformanceTest}: the budgeted pool's
 * accounting, its refusal, the memory each copy lands in, and {@link CpuTransfer#publishedDestination()}.
 */
class CpuTransferBackendTest {
    private static final TensorSpec SPEC = TensorSpec.of(DType.F32, 4);

    private CpuBackend device;
    private CpuExecutor lane;
    private CpuDevicePool pool;
    private CpuTransferBackend transfers;

    @BeforeEach
    void start() {
        device = new CpuBackend("cpu-transfer-test");
        lane = device.forkExecutors(device.rootExecutor(), 1).get(0);
        pool = new CpuDevicePool("cpu-transfer-test/device", 32);
        transfers = new CpuTransferBackend(device, pool);
    }

    @AfterEach
    void stop() {
        device.close();
    }

    private static CpuHostBuffer host(String name, float... values) {
        CpuStorage storage = CpuStorage.allocate(name, values.length * 4L);
        storage.buffer().asFloatBuffer().put(values);
        return new CpuHostBuffer(new CpuWeight(name, TensorSpec.of(DType.F32, values.length), storage));
    }

    private CountDownLatch blockLane() {
        CountDownLatch gate = new CountDownLatch(1);
        device.submit(lane, () -> assertTrue(gate.await(10, TimeUnit.SECONDS)));
        return gate;
    }

    /**
     * Retained values are released by the completion's callbacks, which the lane's worker runs right
     * after recording the outcome and before it takes its next task: a no-op behind the copy is a barrier.
     */
    private void afterCallbacksOf(CpuExecutor executor) throws InterruptedException {
        device.submit(executor, io.graphlane.backend.cpu.CpuWork.NOOP).awaitSuccess();
    }

    @Test
    void promotionCopiesIntoThePoolAndPublishesOnlyAfterItsCompletion() throws Exception {
        CountDownLatch gate = blockLane();
        CpuHostBuffer h = host("w", 1, 2, 3, 4);
        CpuTransfer<CpuWeight> t = transfers.promote(lane, h);
        assertEquals(16, pool.usedBytes(), "the copy's bytes are taken when it is admitted");
        IllegalStateException early = assertThrows(IllegalStateException.class, t::publishedDestination);
        assertTrue(early.getMessage().contains("still running"), early.getMessage());

        h.close(); // the caller lets go of its host handle: the copy still holds the source
        gate.countDown();
        t.completion().awaitSuccess();
        afterCallbacksOf(lane);
        CpuWeight copy = t.publishedDestination();
        assertEquals(CpuStorage.Kind.POOL, copy.storage().kind());
        assertEquals(3f, copy.floats().get(2));
        assertTrue(h.weight().storage().isFreed(), "the retained source is released after the copy's completion");
        afterCallbacksOf(lane);
        copy.close();
        assertEquals(0, pool.usedBytes(), "the pool gets its bytes back when the last handle closes");
    }

    @Test
    void promotionBeyondThePoolIsRefusedBeforeAnythingIsQueued() {
        CpuHostBuffer big = host("big", new float[9]);
        DeviceBudgetExceededException e = assertThrows(DeviceBudgetExceededException.class, () -> transfers.promote(lane, big));
        assertTrue(e.getMessage().contains("copy big needs 36 bytes, 32 of 32 are free"), e.getMessage());
        assertEquals(0, pool.usedBytes());
        assertEquals(1, big.weight().storage().referenceCount(), "nothing retained the source");
    }

    @Test
    void demotionCopiesIntoOwnedHostMemoryAndThePoolKeepsTheDeviceBytesUntilTheirOwnerCloses() throws Exception {
        CpuTransfer<CpuWeight> up = transfers.promote(lane, host("w", 5, 6, 7, 8));
        up.completion().awaitSuccess();
        CpuWeight onDevice = up.publishedDestination();

        CpuTransfer<CpuHostBuffer> down = transfers.demote(lane, onDevice);
        down.completion().awaitSuccess();
        CpuHostBuffer back = down.publishedDestination();
        assertEquals(CpuStorage.Kind.OWNED_DIRECT, back.weight().storage().kind());
        afterCallbacksOf(lane);
        assertEquals(16, pool.usedBytes(), "a demotion leaves the device copy's bytes in the pool");
        onDevice.close();
        assertEquals(0, pool.usedBytes());
        back.close();
    }

    @Test
    void aFailedDemotionNeverPublishesItsDestination() throws Exception {
        CpuTransfer<CpuWeight> up = transfers.promote(lane, host("w", 1, 2, 3, 4));
        up.completion().awaitSuccess();
        CpuWeight onDevice = up.publishedDestination();

        CpuExecutor other = device.forkExecutors(device.rootExecutor(), 1).get(0);
        CpuCompletion failed = device.submit(other, () -> {
            throw new IllegalStateException("producer failed");
        });
        device.orderAfter(failed, lane);
        CpuTransfer<CpuHostBuffer> down = transfers.demote(lane, onDevice);
        down.completion().await();
        afterCallbacksOf(lane);
        assertTrue(down.completion().failure().orElseThrow() instanceof PoisonedPreconditionException);
        IllegalStateException never = assertThrows(IllegalStateException.class, down::publishedDestination);
        assertTrue(never.getMessage().contains("never published"), never.getMessage());
        down.destination().close();
        assertTrue(down.destination().weight().storage().isFreed());
        onDevice.close();
    }
}
