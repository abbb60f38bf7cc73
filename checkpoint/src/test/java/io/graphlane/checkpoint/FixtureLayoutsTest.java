package io.graphlane.checkpoint;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.core.param.EncodedLease;
import io.graphlane.core.tensor.DType;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Map;
import org.junit.jupiter.api.Test;

class FixtureLayoutsTest {

    @Test
    void singleFileCatalogueListsEveryTensorWithItsSpec() {
        CheckpointCatalog catalog = CheckpointCatalog.open(Fixtures.tinyLlama(""));
        assertEquals(4 * 9 + 3, catalog.tensors().size());
        assertEquals(858368L, catalog.totalBytes());
        assertEquals("[256, 64]", catalog.tensor("model.embed_tokens.weight").spec().shape().toString());
        assertEquals(DType.F32, catalog.tensor("model.layers.3.mlp.down_proj.weight").spec().dtype());
        assertEquals("[64, 172]", catalog.tensor("model.layers.3.mlp.down_proj.weight").spec().shape().toString());
        assertEquals(false, catalog.isSharded());
    }

    @Test
    void shardedLayoutHoldsTheSameBytesAsTheSingleFileExactly() {
        try (CheckpointSource single = CheckpointSource.open(Fixtures.tinyLlama(""));
             CheckpointSource sharded = CheckpointSource.open(Fixtures.tinyLlama("sharded"))) {
            assertTrue(sharded.catalog().isSharded());
            assertEquals(2, sharded.catalog().shards().size());
            assertEquals(single.catalog().tensors().keySet(), sharded.catalog().tensors().keySet());
            for (String name : single.catalog().tensors().keySet()) {
                EncodedLease a = single.lease(name);
                EncodedLease b = sharded.lease(name);
                assertEquals(a.spec(), b.spec(), name);
                assertArrayEquals(Fixtures.bytes(a.bytes()), Fixtures.bytes(b.bytes()), name);
                a.release();
                b.release();
            }
            assertEquals(0, single.openLeaseCount());
            assertEquals(0, sharded.openLeaseCount());
        }
    }

    @Test
    void bf16LayoutMatchesF32WithinBf16Rounding() {
        try (CheckpointSource f32 = CheckpointSource.open(Fixtures.tinyLlama(""));
             CheckpointSource bf16 = CheckpointSource.open(Fixtures.tinyLlama("bf16"))) {
            assertEquals(f32.catalog().tensors().keySet(), bf16.catalog().tensors().keySet());
            for (Map.Entry<String, TensorLocation> e : f32.catalog().tensors().entrySet()) {
                String name = e.getKey();
                EncodedLease a = f32.lease(name);
                EncodedLease b = bf16.lease(name);
                assertEquals(DType.BF16, b.spec().dtype(), name);
                assertEquals(a.spec().shape(), b.spec().shape(), name);
                ByteBuffer fa = a.bytes();
                ByteBuffer fb = b.bytes();
                long n = a.spec().shape().elementCount();
                for (int i = 0; i < n; i++) {
                    float exact = fa.getFloat(i * 4);
                    float rounded = Float.intBitsToFloat((fb.getShort(i * 2) & 0xFFFF) << 16);
                    // bf16 keeps 8 significant bits: a rounding error is at most half an ulp, 2^-9 relative
                    float tolerance = Math.abs(exact) * 0x1p-8f + Float.MIN_NORMAL;
                    assertTrue(Math.abs(exact - rounded) <= tolerance,
                            name + "[" + i + "]: f32 " + exact + " vs bf16 " + rounded);
                }
                assertEquals(ByteOrder.LITTLE_ENDIAN, fa.order());
                a.release();
                b.release();
            }
        }
    }
}
