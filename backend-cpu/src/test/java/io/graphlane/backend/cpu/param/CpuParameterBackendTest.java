package io.graphlane.backend.cpu.param;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.backend.cpu.CpuBackend;
import io.graphlane.backend.cpu.CpuExecutor;
import io.graphlane.core.param.EncodedLease;
import io.graphlane.core.param.WeightRecipe;
import io.graphlane.core.tensor.DType;
import io.graphlane.core.tensor.TensorSpec;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class CpuParameterBackendTest {
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

    @Test
    void alignedMappedF32IsUsedInPlaceAndSeesTheFileBytes(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("w.bin");
        ByteBuffer content = ByteBuffer.allocate(8 + 16).order(ByteOrder.LITTLE_ENDIAN);
        content.putLong(0xdeadbeefL).putFloat(1f).putFloat(2f).putFloat(3f).putFloat(4f).flip();
        Files.write(file, content.array());
        TestLease lease;
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            MappedByteBuffer mapped = ch.map(FileChannel.MapMode.READ_ONLY, 0, 24);
            lease = new TestLease("w", TensorSpec.of(DType.F32, 2, 2), mapped.slice(8, 16));
        }
        CpuMaterialization m = params.materialize(lease, loadingLane);
        CpuWeight weight = params.finishMaterialization(m);

        assertTrue(weight.isZeroCopy(), "aligned mapped F32 must be used in place");
        assertEquals(1, lease.releases.get(), "the encoded lease is released once the realization completed");
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
        TestLease lease = new TestLease("u", TensorSpec.of(DType.F32, 4), unaligned);
        CpuWeight weight = params.finishMaterialization(params.materialize(lease, loadingLane));
        assertFalse(weight.isZeroCopy());
        assertEquals(0, weight.bytes().alignmentOffset(0, 4));
        assertEquals(List.of(box(expected)), List.of(box(toArray(weight.floats()))));
        weight.close();
    }

    @Test
    void bf16WideningIsExactForEveryBitPattern() throws Exception {
        ByteBuffer all = allSixteenBitPatterns();
        CpuWeight weight = params.finishMaterialization(
                params.materialize(new TestLease("bf", TensorSpec.of(DType.BF16, 65536), all), loadingLane));
        assertEquals(TensorSpec.of(DType.F32, 65536), weight.spec());
        FloatBuffer f = weight.floats();
        for (int bits = 0; bits < 65536; bits++) {
            assertSameFloat(referenceBf16(bits), f.get(bits), "bf16 0x" + Integer.toHexString(bits));
        }
        weight.close();
    }

    @Test
    void f16WideningIsExactForEveryBitPattern() throws Exception {
        ByteBuffer all = allSixteenBitPatterns();
        CpuWeight weight = params.finishMaterialization(
                params.materialize(new TestLease("h", TensorSpec.of(DType.F16, 256, 256), all), loadingLane));
        assertEquals(TensorSpec.of(DType.F32, 256, 256), weight.spec());
        FloatBuffer f = weight.floats();
        for (int bits = 0; bits < 65536; bits++) {
            assertSameFloat(referenceF16(bits), f.get(bits), "f16 0x" + Integer.toHexString(bits));
        }
        weight.close();
    }

    private static ByteBuffer allSixteenBitPatterns() {
        ByteBuffer b = ByteBuffer.allocateDirect(2 * 65536).order(ByteOrder.LITTLE_ENDIAN);
        for (int bits = 0; bits < 65536; bits++) {
            b.putShort((short) bits);
        }
        return b.flip();
    }

    /** binary16 by its definition, in double arithmetic: sign, 5-bit exponent (bias 15), 10-bit fraction. */
    private static double referenceF16(int bits) {
        return reference(bits, 5, 10);
    }

    /** bfloat16 by its definition: sign, 8-bit exponent (bias 127), 7-bit fraction. */
    private static double referenceBf16(int bits) {
        return reference(bits, 8, 7);
    }

    private static double reference(int bits, int exponentBits, int fractionBits) {
        double sign = (bits >>> 15) == 1 ? -1 : 1;
        int exponent = (bits >>> fractionBits) & ((1 << exponentBits) - 1);
        int fraction = bits & ((1 << fractionBits) - 1);
        int bias = (1 << (exponentBits - 1)) - 1;
        if (exponent == (1 << exponentBits) - 1) {
            return fraction == 0 ? sign * Double.POSITIVE_INFINITY : Double.NaN;
        }
        if (exponent == 0) {
            return sign * fraction / (double) (1 << fractionBits) * Math.pow(2, 1 - bias);
        }
        return sign * (1 + fraction / (double) (1 << fractionBits)) * Math.pow(2, exponent - bias);
    }

    private static void assertSameFloat(double expected, float found, String what) {
        if (Double.isNaN(expected)) {
            assertTrue(Float.isNaN(found), what + ": expected NaN, found " + found);
            return;
        }
        assertEquals(Float.floatToRawIntBits((float) expected), Float.floatToRawIntBits(found),
                what + ": expected " + expected + ", found " + found);
        assertEquals(expected, (double) found, 0.0, what);
    }

    @Test
    void leaseIsHeldUntilTheExactCompletionOfItsRealization() throws Exception {
        CountDownLatch gate = new CountDownLatch(1);
        device.submit(loadingLane, () -> assertTrue(gate.await(10, TimeUnit.SECONDS))); // work queued ahead of the load
        TestLease lease = new TestLease("held", TensorSpec.of(DType.F32, 2), floatsLe(1f, 2f));
        CpuMaterialization m = params.materialize(lease, loadingLane);
        lease.watched = m::completion;

        Thread finisher = new Thread(() -> {
            try {
                params.finishMaterialization(m).close();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        finisher.start();
        assertFalse(m.completion().isDone());
        assertEquals(0, lease.releases.get(), "nothing may release the lease while its realization is queued");
        gate.countDown();
        finisher.join(10_000);
        assertFalse(finisher.isAlive());
        assertEquals(1, lease.releases.get());
        assertEquals(Boolean.TRUE, lease.completionDoneAtRelease, "the lease was released before its completion ended");
    }

    @Test
    void badTensorFailsTheCompletionAndStillReleasesTheLeaseOnce() throws Exception {
        TestLease lease = new TestLease("model.bad.weight", TensorSpec.of(DType.F32, 3), floatsLe(1f, 2f));
        CpuMaterialization m = params.materialize(lease, loadingLane);
        lease.watched = m::completion;
        MaterializationException e = assertThrows(MaterializationException.class, () -> params.finishMaterialization(m));
        assertTrue(e.getMessage().contains("model.bad.weight") && e.getMessage().contains("8 bytes")
                && e.getMessage().contains("needs 12"), e.getMessage());
        assertTrue(m.completion().failure().isPresent());
        assertEquals(1, lease.releases.get());
        assertEquals(Boolean.TRUE, lease.completionDoneAtRelease);
        IllegalStateException again = assertThrows(IllegalStateException.class, () -> params.finishMaterialization(m));
        assertTrue(again.getMessage().contains("already finished"));
        assertEquals(1, lease.releases.get(), "finishing twice must not release twice");
    }

    @Test
    void sharedWeightIsTheSameStorageAndOutlivesTheFirstHandle() throws Exception {
        CpuWeight first = params.finishMaterialization(
                params.materialize(new TestLease("s", TensorSpec.of(DType.BF16, 2), ByteBuffer.allocate(4)), loadingLane));
        CpuWeight second = params.shareMaterializedWeight(first);
        assertSame(first.storage(), second.storage());
        assertEquals(2, first.storage().referenceCount());
        first.close();
        assertEquals(0f, second.floats().get(0));
        assertThrows(IllegalStateException.class, first::bytes);
        assertThrows(IllegalStateException.class, first::close);
        second.close();
        assertTrue(second.storage().isFreed());
    }

    @Test
    void validateBindNamesEveryMismatchWithExpectedAndFound() throws Exception {
        CpuWeight weight = params.finishMaterialization(
                params.materialize(new TestLease("layer.0.q", TensorSpec.of(DType.F32, 2, 3), floatsLe(new float[6])), loadingLane));

        ParameterBindException wrongName = assertThrows(ParameterBindException.class,
                () -> params.validateBind(new CpuParameter("layer.0.k", TensorSpec.of(DType.F32, 2, 3)), weight));
        assertTrue(wrongName.getMessage().contains("name: expected layer.0.k, found layer.0.q"), wrongName.getMessage());

        ParameterBindException wrongShape = assertThrows(ParameterBindException.class,
                () -> params.validateBind(new CpuParameter("layer.0.q", TensorSpec.of(DType.F32, 3, 2)), weight));
        assertTrue(wrongShape.getMessage().contains("shape: expected [3, 2], found [2, 3]"), wrongShape.getMessage());

        ParameterBindException wrongDtype = assertThrows(ParameterBindException.class,
                () -> params.validateBind(new CpuParameter("layer.0.q", TensorSpec.of(DType.I32, 2, 3)), weight));
        assertTrue(wrongDtype.getMessage().contains("dtype: expected I32, found F32"), wrongDtype.getMessage());

        CpuParameter slot = new CpuParameter("layer.0.q", TensorSpec.of(DType.F32, 2, 3));
        params.validateBind(slot, weight);
        assertFalse(slot.isBound(), "validateBind has no side effect");
        params.bind(slot, weight);
        assertSame(weight, slot.weight());

        CpuWeight replacement = params.shareMaterializedWeight(weight);
        params.validateBind(slot, replacement);
        params.bind(slot, replacement);
        assertTrue(weight.isClosed(), "rebinding closes the handle it replaces");
        slot.close();
        assertTrue(weight.storage().isFreed());
        ParameterBindException closed = assertThrows(ParameterBindException.class, () -> params.validateBind(slot, replacement));
        assertTrue(closed.getMessage().contains("already closed"));
    }

    @Test
    void recipeIsEvaluatedIntoNewStorageAndItsSourcesReleasedAfterCompletion() throws Exception {
        ByteBuffer a = ByteBuffer.allocateDirect(4).order(ByteOrder.LITTLE_ENDIAN).putShort((short) 0x3f80).putShort((short) 0x4000).flip();
        ByteBuffer b = ByteBuffer.allocateDirect(4).order(ByteOrder.LITTLE_ENDIAN).putShort((short) 0x4040).putShort((short) 0xc080).flip();
        TestLease qa = new TestLease("q", TensorSpec.of(DType.BF16, 1, 2), a);
        TestLease kb = new TestLease("k", TensorSpec.of(DType.BF16, 1, 2), b);
        ConcatRecipe recipe = new ConcatRecipe("qk", List.of(qa, kb), false);
        CpuMaterialization m = params.materializeRecipe(recipe, loadingLane);
        qa.watched = m::completion;
        kb.watched = m::completion;
        CpuWeight w = params.finishMaterialization(m);
        assertEquals(TensorSpec.of(DType.F32, 2, 2), w.spec());
        assertFalse(w.isZeroCopy());
        assertEquals(List.of(1f, 2f, 3f, -4f), List.of(box(toArray(w.floats()))));
        assertEquals(1, qa.releases.get());
        assertEquals(1, kb.releases.get());
        assertEquals(Boolean.TRUE, qa.completionDoneAtRelease);
        w.close();
    }

    @Test
    void failingRecipeReleasesEverySourceOnce() {
        TestLease qa = new TestLease("q", TensorSpec.of(DType.BF16, 1, 2), ByteBuffer.allocate(4));
        TestLease kb = new TestLease("k", TensorSpec.of(DType.BF16, 1, 2), ByteBuffer.allocate(4));
        CpuMaterialization m = params.materializeRecipe(new ConcatRecipe("qk", List.of(qa, kb), true), loadingLane);
        MaterializationException e = assertThrows(MaterializationException.class, () -> params.finishMaterialization(m));
        assertTrue(e.getMessage().contains("qk"), e.getMessage());
        assertEquals(1, qa.releases.get());
        assertEquals(1, kb.releases.get());
        assertNotEquals(List.of(), m.leaseNames());
    }

    /** Stacks BF16 rows of its sources along axis 0. */
    private record ConcatRecipe(String name, List<TestLease> sources, boolean failing) implements WeightRecipe {
        @Override
        public TensorSpec output() {
            long rows = sources.stream().mapToLong(s -> s.spec().shape().dim(0)).sum();
            return TensorSpec.of(DType.BF16, rows, sources.get(0).spec().shape().dim(1));
        }

        @Override
        public List<EncodedLease> acquireSources() {
            return List.copyOf(sources);
        }

        @Override
        public void evaluate(List<EncodedLease> leased, ByteBuffer out) {
            if (failing) {
                throw new IllegalArgumentException("source k has an unexpected layout");
            }
            for (EncodedLease l : leased) {
                out.put(l.bytes());
            }
        }
    }
}
