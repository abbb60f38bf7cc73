package io.graphlane.backend.gpu.nn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.core.nn.ShapeMismatchException;
import org.junit.jupiter.api.Test;

/** Operand checks refuse, before any launch, every shape the kernels would read out of bounds with. */
class OpShapesTest {

    @Test
    void linearNamesTheOperandAndBothSizes() {
        OpShapes.requireLinear(4, 64, 128, 64, 4, 128);
        ShapeMismatchException e = assertThrows(ShapeMismatchException.class, () -> OpShapes.requireLinear(4, 64, 128, 32, 4, 128));
        assertTrue(e.getMessage().contains("linear: operand weight"), e.getMessage());
        assertTrue(e.getMessage().contains("64") && e.getMessage().contains("32"), e.getMessage());
        assertThrows(ShapeMismatchException.class, () -> OpShapes.requireLinear(4, 64, 128, 64, 4, 64));
    }

    @Test
    void attentionReturnsTheLargestPositionAndRefusesPositionsOutsideTheCache() {
        assertEquals(9, OpShapes.requireAttention(2, 8 * 16, 32, 2 * 16, 32, 2 * 16, new int[] {3, 9}, 8, 2, 16, 2, 8 * 16));
        IndexOutOfBoundsException e = assertThrows(IndexOutOfBoundsException.class,
                () -> OpShapes.requireAttention(1, 128, 32, 32, 32, 32, new int[] {32}, 8, 2, 16, 1, 128));
        assertTrue(e.getMessage().contains("position 32"), e.getMessage());
        assertThrows(ShapeMismatchException.class,
                () -> OpShapes.requireAttention(1, 128, 32, 32, 32, 32, new int[] {0}, 8, 3, 16, 1, 128));
        assertThrows(ShapeMismatchException.class,
                () -> OpShapes.requireAttention(1, 128, 32, 48, 32, 48, new int[] {0}, 8, 2, 16, 1, 128));
    }

    @Test
    void aSlidingWindowBoundsTheAttendedPositions() {
        assertEquals(10, OpShapes.attentionSpan(new int[] {3, 9}, Integer.MAX_VALUE));
        assertEquals(4, OpShapes.attentionSpan(new int[] {3, 9}, 4));
        assertEquals(1, OpShapes.attentionSpan(new int[] {3, 9}, 1));
        assertEquals(2, OpShapes.attentionSpan(new int[] {1, 0}, 3));
        // a window keeps the kernel's shared memory small however far the sequence runs
        assertEquals(4096 * Float.BYTES, LaunchGeometry.attentionSharedBytes(OpShapes.attentionSpan(new int[] {1_000_000}, 4096) - 1,
                48 * 1024));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> OpShapes.attentionSpan(new int[] {3}, 0));
        assertTrue(e.getMessage().contains("window"), e.getMessage());
    }

    @Test
    void ropeNeedsAnEvenHeadDimDividingTheRow() {
        OpShapes.requireRope(128, 16);
        assertThrows(ShapeMismatchException.class, () -> OpShapes.requireRope(128, 15));
        assertThrows(ShapeMismatchException.class, () -> OpShapes.requireRope(120, 16));
    }

    @Test
    void embeddingIdsAndRowSlicesStayInBounds() {
        OpShapes.requireIds(new int[] {0, 255}, 256);
        IndexOutOfBoundsException e = assertThrows(IndexOutOfBoundsException.class, () -> OpShapes.requireIds(new int[] {1, 256}, 256));
        assertTrue(e.getMessage().contains("token id 256 at position 1"), e.getMessage());
        OpShapes.requireRowRange(4, 0, 4);
        assertThrows(IndexOutOfBoundsException.class, () -> OpShapes.requireRowRange(4, 3, 5));
        assertThrows(IndexOutOfBoundsException.class, () -> OpShapes.requireRowRange(4, 2, 1));
    }
}
