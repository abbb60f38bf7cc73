package io.graphlane.backend.cpu.param;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.backend.cpu.CpuBackend;
import io.graphlane.backend.cpu.CpuExecutor;
import io.graphlane.core.tensor.DType;
import io.graphlane.core.tensor.TensorSpec;
import io.graphlane.testkit.ledger.LedgerLease;
import io.graphlane.testkit.ledger.RetentionLedger;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What the CPU parameter backend adds to the laws of {@link CpuParameterConformanceTest}: aligned mapped F32 used
 * in place, unaligned data copied into aligned storage, its error texts, handle counting and rebinding.
 */
class CpuParameterBackendTest {
    private final RetentionLedger ledger = new RetentionLedger();
    private CpuBackend device;
    private CpuExecutor loadingLane;
    private CpuParameterBackend params;

    @BeforeEach
    void start() {
        device = new CpuBackend("cpu-params-test");
        loadingLane = device.forkExecutors(device.rootExecutor(), 1).get(0);
        params = new CpuParameterBackend(device);
    }

    @AfterEach
    void stop() {
        device.close();
    }

    private static ByteBuffer floatsLe(float... values) {
        ByteBuffer b = ByteBuffer.allocateDirect(values.length * 4).order(ByteOrder.LITTLE_ENDIAN);
        for (float v : values) {
            b.putFloat(v);
        }
        return b.flip();
    }

    private static float[] toArray(FloatBuffer fb) {
        float[] out = new float[fb.remaining()];
        fb.get(out);
        return out;
    }

    private LedgerLease lease(String name, TensorSpec spec, ByteBuffer bytes) {
        return new LedgerLease(ledger, name, spec, bytes);
    }

    @Test
    void alignedMappedF32IsUsedInPlaceAndSeesTheFileBytes(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("w.bin");
        ByteBuffer content = ByteBuffer.allocate(8 + 16).order(ByteOrder.LITTLE_ENDIAN);
        content.putLong(0xdeadbeefL).putFloat(1f).putFloat(2f).putFloat(3f).putFloat(4f).flip();
        Files.write(file, content.array());
        LedgerLease lease;
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            MappedByteBuffer mapped = ch.map(FileChannel.MapMode.READ_ONLY, 0, 24);
            lease = lease("w", TensorSpec.of(DType.F32, 2, 2), mapped.slice(8, 16));
        }
        CpuMaterialization m = params.materialize(lease, loadingLane);
        CpuWeight weight = params.finishMaterialization(m);

        assertTrue(weight.isZeroCopy(), "aligned mapped F32 must be used in place");
        assertEquals(1, lease.releaseCount(), "the encoded lease is released once the realization completed");
        assertEquals(TensorSpec.of(DType.F32, 2, 2), weight.spec());
        assertEquals(List.of(1f, 2f, 3f, 4f), List.of(box(toArray(weight.floats()))));

        // Rewrite the file behind the mapping: a zero-copy weight sees the new bytes, a copy would not.
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE)) {
            ch.write(floatsLe(9f), 8 + 4);
        }
        assertEquals(9f, weight.floats().get(1), "the weight must view the mapped file bytes, not a copy of them");
        weight.close();
        assertTrue(weight.storage().isFreed());
    }

    private static Float[] box(float[] values) {
        Float[] out = new Float[values.length];
        for (int i = 0; i < values.length; i++) {
            out[i] = values[i];
        }
        return out;
    }

    @Test
    void unalignedF32IsCopiedIntoAlignedStorage() throws Exception {
        ByteBuffer raw = ByteBuffer.allocateDirect(18).order(ByteOrder.LITTLE_ENDIAN);
        raw.position(2);
        raw.putFloat(5f).putFloat(6f).putFloat(7f).putFloat(8f);
        ByteBuffer unaligned = raw.slice(2, 16);
        if (unaligned.alignmentOffset(0, 4) == 0) {
            unaligned = raw.slice(1, 16); // the platform aligned the base differently: shift by one instead
            unaligned.order(ByteOrder.LITTLE_ENDIAN);
        }
        float[] expected = toArray(unaligned.duplicate().order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer());
        LedgerLease lease = lease("u", TensorSpec.of(DType.F32, 4), unaligned);
        CpuWeight weight = params.finishMaterialization(params.materialize(lease, loadingLane));
        assertFalse(weight.isZeroCopy());
        assertEquals(0, weight.bytes().alignmentOffset(0, 4));
        assertEquals(List.of(box(expected)), List.of(box(toArray(weight.floats()))));
        weight.close();
    }

    @Test
    void badTensorErrorNamesTheBytesFoundAndNeededAndASecondFinishIsRefused() throws Exception {
        LedgerLease lease = lease("model.bad.weight", TensorSpec.of(DType.F32, 3), floatsLe(1f, 2f));
        CpuMaterialization m = params.materialize(lease, loadingLane);
        MaterializationException e = assertThrows(MaterializationException.class, () -> params.finishMaterialization(m));
        assertTrue(e.getMessage().contains("model.bad.weight") && e.getMessage().contains("8 bytes")
                && e.getMessage().contains("needs 12"), e.getMessage());
        IllegalStateException again = assertThrows(IllegalStateException.class, () -> params.finishMaterialization(m));
        assertTrue(again.getMessage().contains("already finished"), again.getMessage());
        assertTrue(m.isFinished());
        assertEquals(List.of("model.bad.weight"), m.leaseNames());
        assertEquals(1, lease.releaseCount());
    }

    @Test
    void eachHandleClosesOnceAndTheLastOneFreesTheStorage() throws Exception {
        CpuWeight first = params.finishMaterialization(
                params.materialize(LedgerLease.zeros(ledger, "s", TensorSpec.of(DType.BF16, 2)), loadingLane));
        CpuWeight second = params.shareMaterializedWeight(first);
        assertEquals(2, first.storage().referenceCount());
        first.close();
        assertFalse(second.storage().isFreed());
        assertThrows(IllegalStateException.class, first::bytes);
        assertThrows(IllegalStateException.class, first::close);
        second.close();
        assertTrue(second.storage().isFreed());
    }

    @Test
    void validateBindListsEveryMismatchAndRefusesAClosedHandle() throws Exception {
        CpuWeight weight = params.finishMaterialization(
                params.materialize(lease("layer.0.q", TensorSpec.of(DType.F32, 2, 3), floatsLe(new float[6])), loadingLane));

        ParameterBindException all = assertThrows(ParameterBindException.class,
                () -> params.validateBind(new CpuParameter("layer.0.k", TensorSpec.of(DType.I32, 3, 2)), weight));
        assertTrue(all.getMessage().contains("name: expected layer.0.k, found layer.0.q; dtype: expected I32, found F32; "
                + "shape: expected [3, 2], found [2, 3]"), all.getMessage());

        CpuParameter slot = new CpuParameter("layer.0.q", TensorSpec.of(DType.F32, 2, 3));
        params.validateBind(slot, weight);
        params.bind(slot, weight);
        assertSame(weight, slot.weight());

        CpuWeight replacement = params.shareMaterializedWeight(weight);
        params.validateBind(slot, replacement);
        params.bind(slot, replacement);
        assertTrue(weight.isClosed(), "rebinding closes the handle it replaces");
        slot.close();
        assertTrue(weight.storage().isFreed());
        ParameterBindException closed = assertThrows(ParameterBindException.class, () -> params.validateBind(slot, replacement));
        assertTrue(closed.getMessage().contains("already closed"), closed.getMessage());
    }
}
