package io.graphlane.checkpoint.recipe;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.checkpoint.CheckpointSource;
import io.graphlane.checkpoint.Fixtures;
import io.graphlane.core.tensor.DType;
import io.graphlane.core.tensor.TensorSpec;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The quantizeQ8 step: its layout, its error bound, its validation and its row slices pushed down to the source. */
class QuantizeQ8Test {
    private static final String Q = "model.layers.0.self_attn.q_proj.weight";
    private static final String DOWN = "model.layers.0.mlp.down_proj.weight";

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
        RecipeException width = assertThrows(RecipeException.class, () -> Recipe.source(f32, DOWN).quantizeQ8());
        assertTrue(width.getMessage().contains("multiple of 32, found shape [64, 172] (172 columns)"), width.getMessage());
        RecipeException vector = assertThrows(RecipeException.class, () -> Recipe.source(f32, "model.norm.weight").quantizeQ8());
        assertTrue(vector.getMessage().contains("needs a matrix [rows, cols], found shape [64]"), vector.getMessage());
        Recipe ints = Recipe.source(f32, Q).view(DType.I32, 64, 64);
        RecipeException dtype = assertThrows(RecipeException.class, ints::quantizeQ8);
        assertTrue(dtype.getMessage().contains("input dtype I32 is not supported"), dtype.getMessage());
    }
}
