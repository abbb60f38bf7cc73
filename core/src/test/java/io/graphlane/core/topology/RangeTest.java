package io.graphlane.core.topology;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.stream.IntStream;
import net.jqwik.api.Assume;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;

class RangeTest {

    @Test
    void eightItemsInThreeParts() {
        List<Range> parts = IntStream.range(0, 3).mapToObj(i -> Range.balanced(8, 3, i)).toList();
        assertEquals(List.of(new Range(0, 3), new Range(3, 6), new Range(6, 8)), parts);
    }

    @Test
    void impossibleSplitsAreRefusedWithTheNumbers() {
        IllegalArgumentException zero = assertThrows(IllegalArgumentException.class, () -> Range.balanced(8, 0, 0));
        assertTrue(zero.getMessage().contains("8 items into 0 parts"), zero.getMessage());
        IllegalArgumentException index = assertThrows(IllegalArgumentException.class, () -> Range.balanced(8, 3, 3));
        assertTrue(index.getMessage().contains("part index 3 is outside [0, 3)"), index.getMessage());
        IllegalArgumentException negative = assertThrows(IllegalArgumentException.class, () -> Range.balanced(8, 3, -1));
        assertTrue(negative.getMessage().contains("part index -1"), negative.getMessage());
        IllegalArgumentException few = assertThrows(IllegalArgumentException.class, () -> Range.balanced(2, 3, 0));
        assertTrue(few.getMessage().contains("need at least 3 items"), few.getMessage());
        assertThrows(IllegalArgumentException.class, () -> new Range(4, 3));
    }

    @Property(tries = 300)
    void partsCoverAllItemsContiguouslyAndTheFirstOnesGetTheExtra(@ForAll @IntRange(min = 1, max = 500) int total,
                                                                 @ForAll @IntRange(min = 1, max = 64) int parts) {
        Assume.that(total >= parts);
        int next = 0;
        for (int i = 0; i < parts; i++) {
            Range r = Range.balanced(total, parts, i);
            assertEquals(next, r.start(), "part " + i + " must start where the previous ended");
            assertEquals(total / parts + (i < total % parts ? 1 : 0), r.size(), "size of part " + i);
            assertTrue(r.contains(r.start()) && !r.contains(r.end()));
            next = r.end();
        }
        assertEquals(total, next);
    }
}
