package io.graphlane.checkpoint.recipe;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.graphlane.checkpoint.CheckpointSource;
import io.graphlane.checkpoint.safetensors.SafetensorsWriter;
import io.graphlane.core.tensor.DType;
import io.graphlane.core.tensor.TensorSpec;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The offset step: F32 values plus a constant, each sum rounded once; refused on other dtypes; ranges push down. */
class OffsetRecipeTest {
    @TempDir
    Path tmp;

    @Test
    void addsTheOffsetToEveryValueAndSlicesPushDown() throws IOException {
        Path dir = Files.createDirectories(tmp.resolve("m"));
        float[] values = {1.25f, 0.9999999f, 1.0000001f, -3f, 2.5e-8f, 7f};
        ByteBuffer f = ByteBuffer.allocate(4 * values.length).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < values.length; i++) {
            f.putFloat(4 * i, values[i]);
        }
        new SafetensorsWriter().add("f", TensorSpec.of(DType.F32, 2, 3), f)
                .add("h", TensorSpec.of(DType.BF16, 2), ByteBuffer.allocate(4))
                .write(dir.resolve("model.safetensors"));
        try (CheckpointSource src = CheckpointSource.open(dir)) {
            DerivedWeight w = DerivedWeight.of("w", Recipe.source(src, "f").offset(-1f));
            assertEquals(TensorSpec.of(DType.F32, 2, 3), w.output());
            ByteBuffer out = w.evaluateToBuffer().order(ByteOrder.LITTLE_ENDIAN);
            for (int i = 0; i < values.length; i++) {
                assertEquals(values[i] - 1f, out.getFloat(out.position() + 4 * i), "value " + i);
            }
            ByteBuffer row = w.shard(0, 1, 2).evaluateToBuffer().order(ByteOrder.LITTLE_ENDIAN);
            assertEquals(values[3] - 1f, row.getFloat(row.position()));
            assertEquals("offset(-1.0, source('f'[axis 0: 1..2)))", w.shard(0, 1, 2).recipe().toString());
            RecipeException bf16 = assertThrows(RecipeException.class, () -> Recipe.source(src, "h").offset(-1f));
            assertEquals("recipe step offset(-1.0) of source('h'): input dtype BF16 is not supported, expected F32", bf16.getMessage());
            assertThrows(RecipeException.class, () -> Recipe.source(src, "f").offset(Float.NaN));
            assertEquals(0, src.openLeaseCount());
        }
    }
}
