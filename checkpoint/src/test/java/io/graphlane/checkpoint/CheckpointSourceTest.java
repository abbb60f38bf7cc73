package io.graphlane.checkpoint;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.checkpoint.safetensors.SafetensorsWriter;
import io.graphlane.core.param.EncodedLease;
import io.graphlane.core.tensor.DType;
import io.graphlane.core.tensor.Shape;
import io.graphlane.core.tensor.TensorSpec;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class CheckpointSourceTest {
    @TempDir
    Path tmp;

    /** A [4, 3, 2] F32 tensor "t" whose element i holds the value i, plus a 1-element tensor "u". */
    private Path countingCheckpoint() {
        float[] values = new float[24];
        for (int i = 0; i < values.length; i++) {
            values[i] = i;
        }
        new SafetensorsWriter()
                .addF32("t", new long[] {4, 3, 2}, values)
                .addF32("u", new long[] {1}, new float[] {99})
                .write(tmp.resolve("model.safetensors"));
        return tmp;
    }

    private static float[] floats(EncodedLease lease) {
        ByteBuffer b = lease.bytes();
        float[] out = new float[b.remaining() / 4];
        b.asFloatBuffer().get(out);
        return out;
    }

    @Test
    void releasingTwiceIsReportedNamingTheLease() {
        try (CheckpointSource source = CheckpointSource.open(countingCheckpoint())) {
            EncodedLease lease = source.lease("t", Selection.range(0, 1, 2));
            lease.release();
            assertTrue(lease.isReleased());
            IllegalStateException e = assertThrows(IllegalStateException.class, lease::release);
            assertTrue(e.getMessage().contains("t[axis 0: 1..2)"), e.getMessage());
            assertTrue(e.getMessage().contains("released twice"), e.getMessage());
            assertThrows(IllegalStateException.class, lease::bytes);
            assertEquals(0, source.openLeaseCount());
        }
    }

    @Test
    void rangeOnTheFirstAxisIsAZeroCopyViewMappingOnlyItsBytes() {
        try (CheckpointSource source = CheckpointSource.open(countingCheckpoint())) {
            long before = source.mappedBytes();
            EncodedLease lease = source.lease("t", Selection.range(0, 1, 3));
            assertEquals(TensorSpec.of(DType.F32, 2, 3, 2), lease.spec());
            assertEquals(2 * 3 * 2 * 4, source.mappedBytes() - before, "mapped exactly the selected rows");
            assertArrayEquals(new float[] {6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17}, floats(lease));
            assertTrue(lease.bytes().isDirect() && lease.bytes().isReadOnly());
            lease.release();
        }
    }

    @Test
    void rangeOnAnInnerAxisGathersTheStridedRowsFromTheirCoveringSpanOnly() {
        try (CheckpointSource source = CheckpointSource.open(countingCheckpoint())) {
            long before = source.mappedBytes();
            EncodedLease lease = source.lease("t", Selection.range(1, 1, 2));
            assertEquals(TensorSpec.of(DType.F32, 4, 1, 2), lease.spec());
            assertArrayEquals(new float[] {2, 3, 8, 9, 14, 15, 20, 21}, floats(lease));
            // covering span: from element 2 to element 22 (exclusive), not the whole 24 elements
            assertEquals(20 * 4, source.mappedBytes() - before);
            lease.release();
        }
    }

    @Test
    void indexSetAndSpanSelectTheNamedElementsInOrder() {
        try (CheckpointSource source = CheckpointSource.open(countingCheckpoint())) {
            EncodedLease idx = source.lease("t", Selection.indices(2, 1, 0));
            assertEquals(TensorSpec.of(DType.F32, 4, 3, 2), idx.spec());
            float[] swapped = floats(idx);
            for (int i = 0; i < 12; i++) {
                assertEquals(2 * i + 1, swapped[2 * i]);
                assertEquals(2 * i, swapped[2 * i + 1]);
            }
            EncodedLease rows = source.lease("t", Selection.indices(0, 3, 0, 3));
            assertEquals(Shape.of(3, 3, 2), rows.spec().shape());
            float[] r = floats(rows);
            assertEquals(18, r[0]);
            assertEquals(0, r[6]);
            assertEquals(23, r[17]);
            EncodedLease span = source.lease("t", Selection.span(5, 9));
            assertEquals(TensorSpec.of(DType.F32, 4), span.spec());
            assertArrayEquals(new float[] {5, 6, 7, 8}, floats(span));
            idx.release();
            rows.release();
            span.release();
        }
    }

    @Test
    void selectionThatDoesNotFitIsRefusedNamingTensorAndBounds() {
        try (CheckpointSource source = CheckpointSource.open(countingCheckpoint())) {
            CheckpointException e = assertThrows(CheckpointException.class,
                    () -> source.lease("t", Selection.range(1, 2, 5)));
            assertTrue(e.getMessage().contains("'t'") && e.getMessage().contains("[2, 5)")
                    && e.getMessage().contains("dimension 3"), e.getMessage());
            assertThrows(CheckpointException.class, () -> source.lease("t", Selection.indices(3, 0)));
            assertThrows(CheckpointException.class, () -> source.lease("t", Selection.span(20, 25)));
            CheckpointException unknown = assertThrows(CheckpointException.class, () -> source.lease("nope"));
            assertTrue(unknown.getMessage().contains("'nope'"), unknown.getMessage());
            assertEquals(0, source.openLeaseCount());
            assertTrue(source.pinnedShards().isEmpty(), "a refused lease pins nothing");
        }
    }

    @Test
    void everyMappingPinnedRefusesAcquisitionListingThePinnedShards() {
        Path dir = Fixtures.tinyLlama("sharded");
        try (CheckpointSource source = CheckpointSource.open(dir, 1)) {
            Map<String, TensorLocation> tensors = source.catalog().tensors();
            String inFirst = tensors.values().stream().filter(t -> t.shardName().startsWith("model-00001")).findFirst().orElseThrow().name();
            String inSecond = tensors.values().stream().filter(t -> t.shardName().startsWith("model-00002")).findFirst().orElseThrow().name();
            EncodedLease a = source.lease(inFirst);
            EncodedLease a2 = source.lease(inFirst);
            MappingCacheExhaustedException e = assertThrows(MappingCacheExhaustedException.class, () -> source.lease(inSecond));
            assertEquals(1, e.pinnedShards().size());
            assertTrue(e.pinnedShards().get(0).startsWith("model-00001-of-00002.safetensors (2 leases)"), e.getMessage());
            a.release();
            // still pinned by a2: never evicted
            assertThrows(MappingCacheExhaustedException.class, () -> source.lease(inSecond));
            assertFalse(a2.isReleased());
            assertEquals(a2.spec().byteSize(), a2.bytes().remaining());
            a2.release();
            EncodedLease b = source.lease(inSecond);
            assertEquals(1, source.openShardCount());
            assertEquals(source.catalog().tensor(inSecond).spec(), b.spec());
            b.release();
        }
    }

    @Test
    void leastRecentlyUsedUnpinnedShardIsEvictedAndPinnedOneKept() {
        Path dir = Fixtures.tinyLlama("sharded");
        try (CheckpointSource source = CheckpointSource.open(dir, 1)) {
            String inFirst = "lm_head.weight";
            String inSecond = "model.norm.weight";
            EncodedLease a = source.lease(inFirst);
            byte[] before = Fixtures.bytes(a.bytes());
            a.release();
            EncodedLease b = source.lease(inSecond);
            assertEquals(1, source.openShardCount());
            assertEquals(source.catalog().tensor(inSecond).shardPath(), source.pinnedShards().get(0));
            b.release();
            EncodedLease again = source.lease(inFirst);
            assertArrayEquals(before, Fixtures.bytes(again.bytes()));
            again.release();
        }
    }

    @Test
    void closedSourceRefusesNewLeasesButOpenOnesStayReadable() {
        CheckpointSource source = CheckpointSource.open(countingCheckpoint());
        EncodedLease lease = source.lease("t", Selection.range(1, 0, 1));
        source.close();
        assertThrows(CheckpointException.class, () -> source.lease("u"));
        assertEquals(0f, floats(lease)[0]);
        lease.release();
        assertTrue(source.pinnedShards().isEmpty());
    }
}
