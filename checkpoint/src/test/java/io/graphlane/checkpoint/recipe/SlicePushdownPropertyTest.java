package io.graphlane.checkpoint.recipe;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.graphlane.checkpoint.CheckpointSource;
import io.graphlane.checkpoint.Fixtures;
import io.graphlane.checkpoint.Selection;
import io.graphlane.checkpoint.safetensors.SafetensorsWriter;
import io.graphlane.core.tensor.DType;
import io.graphlane.core.tensor.TensorSpec;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.BeforeContainer;

/**
 * For random recipes (concatenations, stacks, transposes, reshapes, casts, views over sources with
 * selections) and random ranges on a random axis, the pushed-down slice infers the same spec and
 * yields exactly the same bytes as slicing the full result.
 */
class SlicePushdownPropertyTest {
    private static Path dir;
    private static CheckpointSource source;

    @BeforeContainer
    static void writeCheckpoint() throws IOException {
        dir = Files.createTempDirectory("graphlane-recipes");
        SafetensorsWriter w = new SafetensorsWriter();
        float[] a = new float[6 * 4 * 2];
        float[] b = new float[3 * 4 * 2];
        for (int i = 0; i < a.length; i++) {
            a[i] = i;
        }
        for (int i = 0; i < b.length; i++) {
            b[i] = -1000 - i;
        }
        w.addF32("a", new long[] {6, 4, 2}, a).addF32("b", new long[] {3, 4, 2}, b);
        w.write(dir.resolve("model.safetensors"));
        source = CheckpointSource.open(dir);
    }

    @AfterContainer
    static void cleanUp() throws IOException {
        source.close();
        try (Stream<Path> files = Files.walk(dir)) {
            files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }

    /** One of several recipe shapes over "a" and "b", all of rank 3 except where noted. */
    private static Recipe recipe(int kind) {
        Recipe a = Recipe.source(source, "a");
        Recipe b = Recipe.source(source, "b");
        return switch (kind) {
            case 0 -> Recipe.concat(0, a, b, a);
            case 1 -> Recipe.concat(1, Recipe.source(source, "a", Selection.range(0, 1, 4)), b);
            case 2 -> Recipe.concat(0, a, b).transpose(2, 0, 1);
            case 3 -> a.reshape(6, 8).cast(DType.BF16).reshape(6, 4, 2);
            case 4 -> Recipe.stack(1, List.of(b, Recipe.source(source, "a", Selection.range(0, 3, 6)))).reshape(3, 8, 2);
            case 5 -> Recipe.concat(2, a.transpose(0, 2, 1).reshape(6, 2, 4), a.reshape(6, 2, 4)).cast(DType.F64).view(DType.I64, 6, 2, 8);
            case 6 -> Recipe.source(source, "a", Selection.indices(1, 3, 0, 2)).transpose(1, 0, 2);
            default -> Recipe.concat(0, b, a.select(Selection.range(2, 1, 2)).reshape(6, 4).reshape(6, 4, 1).transpose(0, 1, 2)
                    .reshape(3, 4, 2));
        };
    }

    private static byte[] slice(byte[] full, TensorSpec spec, int axis, long start, long end) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        Selection.range(axis, start, end).forEachBlock(spec.shape(), spec.dtype().byteSize(),
                (offset, length) -> out.write(full, (int) offset, (int) length));
        return out.toByteArray();
    }

    @Property(tries = 200, seed = "7")
    void pushedDownSliceEqualsSliceOfTheFullResult(@ForAll @IntRange(min = 0, max = 7) int kind,
                                                   @ForAll @IntRange(min = 0, max = 2) int axisChoice,
                                                   @ForAll @IntRange(min = 0, max = 100) int a,
                                                   @ForAll @IntRange(min = 0, max = 100) int b) {
        DerivedWeight full = DerivedWeight.of("w", recipe(kind));
        int axis = axisChoice % full.output().shape().rank();
        long dim = full.output().shape().dim(axis);
        long start = Math.min(a, b) % (dim + 1);
        long end = start + (Math.max(a, b) % (dim - start + 1));
        byte[] fullBytes = Fixtures.bytes(full.evaluateToBuffer());
        DerivedWeight shard = full.shard(axis, start, end);
        long[] dims = full.output().shape().dims();
        dims[axis] = end - start;
        assertEquals(TensorSpec.of(full.output().dtype(), dims), shard.output(), shard.recipe().toString());
        assertArrayEquals(slice(fullBytes, full.output(), axis, start, end), Fixtures.bytes(shard.evaluateToBuffer()),
                "kind " + kind + " axis " + axis + " [" + start + ", " + end + "): " + shard.recipe());
        assertEquals(0, source.openLeaseCount());
    }
}
