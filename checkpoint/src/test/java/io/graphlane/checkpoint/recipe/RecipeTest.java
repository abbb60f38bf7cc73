package io.graphlane.checkpoint.recipe;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.checkpoint.CheckpointSource;
import io.graphlane.checkpoint.Fixtures;
import io.graphlane.checkpoint.Selection;
import io.graphlane.core.param.EncodedLease;
import io.graphlane.core.tensor.DType;
import io.graphlane.core.tensor.TensorSpec;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class RecipeTest {
    private static final String Q = "model.layers.0.self_attn.q_proj.weight";
    private static final String K = "model.layers.0.self_attn.k_proj.weight";
    private static final String V = "model.layers.0.self_attn.v_proj.weight";
    private static final String O = "model.layers.0.self_attn.o_proj.weight";

    private CheckpointSource f32;
    private CheckpointSource bf16;

    @BeforeEach
    void open() {
        f32 = CheckpointSource.open(Fixtures.tinyLlama(""));
        bf16 = CheckpointSource.open(Fixtures.tinyLlama("bf16"));
    }

    @AfterEach
    void close() {
        assertEquals(List.of(), f32.openLeases(), "every lease released");
        assertEquals(List.of(), bf16.openLeases(), "every lease released");
        f32.close();
        bf16.close();
    }

    private byte[] raw(CheckpointSource s, String key) {
        EncodedLease l = s.lease(key);
        try {
            return Fixtures.bytes(l.bytes());
        } finally {
            l.release();
        }
    }

    private static byte[] sliceOf(byte[] full, TensorSpec spec, int axis, long start, long end) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        Selection.range(axis, start, end).forEachBlock(spec.shape(), spec.dtype().byteSize(),
                (offset, length) -> out.write(full, (int) offset, (int) length));
        return out.toByteArray();
    }

    private DerivedWeight fusedQkv() {
        return DerivedWeight.of("qkv", Recipe.concat(0,
                Recipe.source(f32, Q), Recipe.source(f32, K), Recipe.source(f32, V)));
    }

    @Test
    void fusedQkvByConcatenateIsQThenKThenV() {
        DerivedWeight qkv = fusedQkv();
        assertEquals(TensorSpec.of(DType.F32, 128, 64), qkv.output());
        ByteArrayOutputStream expected = new ByteArrayOutputStream();
        expected.writeBytes(raw(f32, Q));
        expected.writeBytes(raw(f32, K));
        expected.writeBytes(raw(f32, V));
        assertArrayEquals(expected.toByteArray(), Fixtures.bytes(qkv.evaluateToBuffer()));
    }

    @Test
    void evaluateWritesAtTheOutputPositionAndAdvancesIt() {
        DerivedWeight w = DerivedWeight.renamed("norm", f32, "model.norm.weight");
        ByteBuffer out = ByteBuffer.allocate(8 + 256);
        out.position(8);
        List<EncodedLease> leases = w.acquireSources();
        w.evaluate(leases, out);
        leases.forEach(EncodedLease::release);
        assertEquals(8 + 256, out.position());
        byte[] written = new byte[256];
        out.get(8, written);
        assertArrayEquals(raw(f32, "model.norm.weight"), written);
    }

    @Test
    void gateUpConcatenatedAlongColumnsInterleavesRows() {
        String gate = "model.layers.1.mlp.gate_proj.weight";
        String up = "model.layers.1.mlp.up_proj.weight";
        DerivedWeight w = DerivedWeight.of("gate_up_cols", Recipe.concat(1, Recipe.source(f32, gate), Recipe.source(f32, up)));
        assertEquals(TensorSpec.of(DType.F32, 172, 128), w.output());
        ByteBuffer out = w.evaluateToBuffer();
        byte[] g = raw(f32, gate);
        byte[] u = raw(f32, up);
        for (int row = 0; row < 172; row += 57) {
            byte[] got = new byte[512];
            out.get(row * 512, got);
            byte[] expected = new byte[512];
            System.arraycopy(g, row * 256, expected, 0, 256);
            System.arraycopy(u, row * 256, expected, 256, 256);
            assertArrayEquals(expected, got, "row " + row);
        }
    }

    @Test
    void tensorParallelShardOfFusedQkvIsPushedDownAndEqualsTheSliceOfTheFullResult() {
        DerivedWeight full = fusedQkv();
        byte[] fullBytes = Fixtures.bytes(full.evaluateToBuffer());
        int tp = 4;
        for (int rank = 0; rank < tp; rank++) {
            long start = rank * 32L;
            long end = start + 32;
            DerivedWeight shard = full.shard(0, start, end);
            assertEquals(TensorSpec.of(DType.F32, 32, 64), shard.output());
            assertFalse(shard.recipe().toString().contains("select"), "pushed down: " + shard.recipe());
            for (Recipe.Source s : shard.recipe().sources()) {
                assertTrue(s.selection() instanceof Selection.Range, s.toString());
            }
            long mappedBefore = f32.mappedBytes();
            byte[] got = Fixtures.bytes(shard.evaluateToBuffer());
            assertEquals(32 * 64 * 4, f32.mappedBytes() - mappedBefore, "a shard maps only its own rows");
            assertArrayEquals(sliceOf(fullBytes, full.output(), 0, start, end), got, "rank " + rank);
        }
        // a shard straddling q and k concatenates two pushed-down ranges
        DerivedWeight straddle = full.shard(0, 48, 80);
        assertEquals(2, straddle.recipe().sources().size());
        assertEquals(Selection.range(0, 48, 64), straddle.recipe().sources().get(0).selection());
        assertEquals(Selection.range(0, 0, 16), straddle.recipe().sources().get(1).selection());
        assertArrayEquals(sliceOf(fullBytes, full.output(), 0, 48, 80), Fixtures.bytes(straddle.evaluateToBuffer()));
    }

    @Test
    void rowParallelShardOfATransposePushesTheRangeToTheOtherSourceAxis() {
        DerivedWeight full = DerivedWeight.of("o_t", Recipe.source(f32, O).transpose(1, 0));
        byte[] fullBytes = Fixtures.bytes(full.evaluateToBuffer());
        DerivedWeight shard = full.shard(0, 16, 48);
        assertEquals(Selection.range(1, 16, 48), shard.recipe().sources().get(0).selection());
        assertArrayEquals(sliceOf(fullBytes, full.output(), 0, 16, 48), Fixtures.bytes(shard.evaluateToBuffer()));
        // and the transpose itself is right: element (i, j) of the result is (j, i) of o_proj
        ByteBuffer o = ByteBuffer.wrap(raw(f32, O)).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        ByteBuffer t = ByteBuffer.wrap(fullBytes).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < 64; i += 7) {
            for (int j = 0; j < 64; j += 5) {
                assertEquals(o.getFloat((j * 64 + i) * 4), t.getFloat((i * 64 + j) * 4));
            }
        }
    }

    @Test
    void castOfBf16ToF32IsExactWideningAndCloseToTheF32Checkpoint() {
        DerivedWeight w = DerivedWeight.of("q32", Recipe.source(bf16, Q).cast(DType.F32));
        assertEquals(TensorSpec.of(DType.F32, 64, 64), w.output());
        ByteBuffer got = w.evaluateToBuffer();
        ByteBuffer halves = ByteBuffer.wrap(raw(bf16, Q)).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        ByteBuffer exact = ByteBuffer.wrap(raw(f32, Q)).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < 64 * 64; i++) {
            float v = got.getFloat(i * 4);
            assertEquals(HalfPrecision.bf16ToF32(halves.getShort(i * 2)), v);
            assertEquals(HalfPrecision.f32ToBf16(exact.getFloat(i * 4)), halves.getShort(i * 2), "element " + i);
        }
    }

    @Test
    void viewReinterpretsBitsAndStackAddsAnAxis() {
        DerivedWeight bits = DerivedWeight.of("bits", Recipe.source(f32, "model.norm.weight").view(DType.I32, 8, 8));
        ByteBuffer b = bits.evaluateToBuffer();
        ByteBuffer f = ByteBuffer.wrap(raw(f32, "model.norm.weight")).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        assertEquals(Float.floatToRawIntBits(f.getFloat(4 * 9)), b.getInt(4 * 9));
        DerivedWeight stacked = DerivedWeight.of("norms", Recipe.stack(0, List.of(
                Recipe.source(f32, "model.layers.0.input_layernorm.weight"),
                Recipe.source(f32, "model.layers.1.input_layernorm.weight"))));
        assertEquals(TensorSpec.of(DType.F32, 2, 64), stacked.output());
        ByteArrayOutputStream expected = new ByteArrayOutputStream();
        expected.writeBytes(raw(f32, "model.layers.0.input_layernorm.weight"));
        expected.writeBytes(raw(f32, "model.layers.1.input_layernorm.weight"));
        assertArrayEquals(expected.toByteArray(), Fixtures.bytes(stacked.evaluateToBuffer()));
        DerivedWeight columns = DerivedWeight.of("cols", Recipe.stack(1, List.of(
                Recipe.source(f32, "model.layers.0.input_layernorm.weight"),
                Recipe.source(f32, "model.layers.1.input_layernorm.weight"))));
        ByteBuffer c = columns.evaluateToBuffer();
        ByteBuffer l1 = ByteBuffer.wrap(raw(f32, "model.layers.1.input_layernorm.weight")).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        assertEquals(l1.getFloat(4 * 5), c.getFloat(4 * (5 * 2 + 1)));
    }

    @Test
    void invalidStepsAreRefusedNamingStepAndValuesBeforeAnyByteIsRead() {
        long before = f32.mappedBytes();
        RecipeException dims = assertThrows(RecipeException.class,
                () -> Recipe.concat(0, Recipe.source(f32, Q), Recipe.source(f32, "model.layers.0.mlp.down_proj.weight")));
        assertTrue(dims.getMessage().contains("[64, 172]") && dims.getMessage().contains("dimension 1 to be 64"), dims.getMessage());
        RecipeException dtype = assertThrows(RecipeException.class,
                () -> Recipe.concat(0, Recipe.source(f32, Q), Recipe.source(bf16, Q)));
        assertTrue(dtype.getMessage().contains("dtype BF16, expected F32"), dtype.getMessage());
        RecipeException axis = assertThrows(RecipeException.class, () -> Recipe.concat(2, Recipe.source(f32, Q)));
        assertTrue(axis.getMessage().contains("axis 2"), axis.getMessage());
        RecipeException perm = assertThrows(RecipeException.class, () -> Recipe.source(f32, Q).transpose(0, 0));
        assertTrue(perm.getMessage().contains("not a permutation"), perm.getMessage());
        assertThrows(RecipeException.class, () -> Recipe.source(f32, Q).transpose(1, 0, 2));
        RecipeException reshape = assertThrows(RecipeException.class, () -> Recipe.source(f32, Q).reshape(63, 64));
        assertTrue(reshape.getMessage().contains("4032 elements, expected 4096"), reshape.getMessage());
        RecipeException view = assertThrows(RecipeException.class, () -> Recipe.source(f32, Q).view(DType.F16, 64, 64));
        assertTrue(view.getMessage().contains("8192 bytes, expected the input's 16384"), view.getMessage());
        assertThrows(RecipeException.class, () -> Recipe.source(f32, Q).cast(DType.I32));
        assertThrows(RecipeException.class, () -> Recipe.stack(0, List.of(Recipe.source(f32, Q), Recipe.source(f32, K))));
        assertThrows(RecipeException.class, () -> Recipe.stack(3, List.of(Recipe.source(f32, Q))));
        RecipeException unknown = assertThrows(RecipeException.class, () -> Recipe.source(f32, "model.nothing"));
        assertTrue(unknown.getMessage().contains("'model.nothing'"), unknown.getMessage());
        assertThrows(RecipeException.class, () -> Recipe.source(f32, Q, Selection.range(0, 60, 70)));
        assertThrows(RecipeException.class, () -> fusedQkv().shard(0, 100, 140));
        assertThrows(RecipeException.class, () -> Recipe.source(f32, Q).select(Selection.indices(1, 64)));
        assertEquals(before, f32.mappedBytes(), "validation read nothing");
    }

    @Test
    void mismatchedLeasesAndShortOutputAreRefused() {
        DerivedWeight w = fusedQkv();
        List<EncodedLease> leases = w.acquireSources();
        try {
            assertThrows(RecipeException.class, () -> w.evaluate(leases.subList(0, 2), ByteBuffer.allocate(1 << 16)));
            assertThrows(RecipeException.class, () -> w.evaluate(List.of(leases.get(1), leases.get(0), leases.get(2)),
                    ByteBuffer.allocate(1 << 16)));
            RecipeException small = assertThrows(RecipeException.class, () -> w.evaluate(leases, ByteBuffer.allocate(100)));
            assertTrue(small.getMessage().contains("expected 32768"), small.getMessage());
        } finally {
            leases.forEach(EncodedLease::release);
        }
    }

    @Test
    void eachBlockOf32IsItsQuantsTimesItsScaleWithinHalfAStep() {
        DerivedWeight q8 = DerivedWeight.of("q8", Recipe.source(f32, Q).quantizeQ8());
        assertEquals(TensorSpec.of(DType.I8, 64, 72), q8.output(), "64 quants and 2 scales of 4 bytes per row");
        ByteBuffer quantized = q8.evaluateToBuffer().order(ByteOrder.LITTLE_ENDIAN);
        ByteBuffer original = DerivedWeight.renamed("q", f32, Q).evaluateToBuffer().order(ByteOrder.LITTLE_ENDIAN);
        for (int r = 0; r < 64; r++) {
            for (int b = 0; b < 2; b++) {
                float scale = quantized.getFloat(r * 72 + 64 + b * 4);
                float max = 0;
                int largestQuant = 0;
                for (int i = 0; i < 32; i++) {
                    int col = b * 32 + i;
                    float value = original.getFloat((r * 64 + col) * 4);
                    byte q = quantized.get(r * 72 + col);
                    max = Math.max(max, Math.abs(value));
                    largestQuant = Math.max(largestQuant, Math.abs(q));
                    assertTrue(Math.abs(value - scale * q) <= scale / 2 * 1.0001f, "row " + r + " col " + col);
                }
                assertEquals(max / 127f, scale, "the scale maps the block's largest magnitude to 127");
                assertEquals(127, largestQuant);
            }
        }
    }

    @Test
    void aBf16SourceIsWidenedFirstAndRowSlicesPushDownToTheSource() {
        Recipe whole = Recipe.source(bf16, Q).quantizeQ8();
        Recipe rows = whole.slice(0, 16, 48);
        assertEquals("quantizeQ8(" + Recipe.source(bf16, Q).slice(0, 16, 48) + ")", rows.toString());
        byte[] full = Fixtures.bytes(DerivedWeight.of("q8", whole).evaluateToBuffer());
        byte[] part = Fixtures.bytes(DerivedWeight.of("q8", rows).evaluateToBuffer());
        byte[] expected = new byte[32 * 72];
        System.arraycopy(full, 16 * 72, expected, 0, expected.length);
        assertArrayEquals(expected, part);
        RecipeException columns = assertThrows(RecipeException.class, () -> whole.slice(1, 0, 36));
        assertTrue(columns.getMessage().contains("sliced by rows (axis 0) only, found axis 1"), columns.getMessage());
    }

    @Test
    void aWidthThatIsNotAMultipleOf32OrANonFloatInputIsRefusedBeforeReading() {
        RecipeException width = assertThrows(RecipeException.class, () -> Recipe.source(f32, "model.layers.0.mlp.down_proj.weight").quantizeQ8());
        assertTrue(width.getMessage().contains("multiple of 32, found shape [64, 172] (172 columns)"), width.getMessage());
        RecipeException vector = assertThrows(RecipeException.class, () -> Recipe.source(f32, "model.norm.weight").quantizeQ8());
        assertTrue(vector.getMessage().contains("needs a matrix [rows, cols], found shape [64]"), vector.getMessage());
        Recipe ints = Recipe.source(f32, Q).view(DType.I32, 64, 64);
        RecipeException dtype = assertThrows(RecipeException.class, ints::quantizeQ8);
        assertTrue(dtype.getMessage().contains("input dtype I32 is not supported"), dtype.getMessage());
    }
}
