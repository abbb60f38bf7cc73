package io.graphlane.backend.gpu.param;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.LongRange;
import org.junit.jupiter.api.Test;

/** The chunking of staged uploads: every byte once, in order, whole elements, buffers taking turns. */
class StagingPlanTest {

    @Property(tries = 300)
    void chunksTileTheSourceAndMapToTheWidenedDestination(@ForAll @LongRange(min = 0, max = 1 << 22) long elements,
                                                         @ForAll @IntRange(min = 1, max = 4) int buffers,
                                                         @ForAll @IntRange(min = 1, max = 64) int chunkKib,
                                                         @ForAll("elementSizes") int sourceElement) {
        long sourceBytes = elements * sourceElement;
        int destinationElement = sourceElement == 2 ? 4 : sourceElement;
        StagingPlan plan = StagingPlan.of(sourceBytes, sourceElement, destinationElement, chunkKib * 1024L, buffers);
        long expectedOffset = 0;
        for (StagingPlan.Chunk c : plan.chunks()) {
            assertEquals(expectedOffset, c.sourceOffset(), "chunks are contiguous and in order");
            assertEquals(0, c.length() % sourceElement, "whole elements only");
            assertEquals(c.index() % buffers, c.slot(), "buffers take turns");
            assertEquals(c.sourceOffset() / sourceElement * destinationElement, c.destinationOffset());
            assertEquals(c.length() / sourceElement, c.elements());
            expectedOffset += c.length();
        }
        assertEquals(sourceBytes, expectedOffset, "every byte exactly once");
    }

    @net.jqwik.api.Provide
    net.jqwik.api.Arbitrary<Integer> elementSizes() {
        return net.jqwik.api.Arbitraries.of(1, 2, 4, 8);
    }

    @Test
    void aChunkWaitsForTheCopyThatLastUsedItsBuffer() {
        StagingPlan plan = StagingPlan.of(10 * 4096, 2, 4, 4096, 2);
        List<StagingPlan.Chunk> chunks = plan.chunks();
        assertEquals(10, chunks.size());
        assertEquals(java.util.Optional.empty(), plan.previousUserOfSlot(chunks.get(1), 2));
        assertEquals(chunks.get(3), plan.previousUserOfSlot(chunks.get(5), 2).orElseThrow());
        assertEquals(8192, chunks.get(1).destinationOffset());
    }

    @Test
    void chunkSizeIsRoundedDownToWholeElementsAndRefusesImpossiblePlans() {
        StagingPlan plan = StagingPlan.of(24, 8, 8, 20, 2);
        assertEquals(List.of(16L, 8L), plan.chunks().stream().map(StagingPlan.Chunk::length).toList());
        assertThrows(IllegalArgumentException.class, () -> StagingPlan.of(10, 4, 4, 4096, 2));
        assertThrows(IllegalArgumentException.class, () -> StagingPlan.of(16, 8, 8, 4, 2));
        assertThrows(IllegalArgumentException.class, () -> StagingPlan.of(16, 8, 8, 4096, 0));
    }
}
