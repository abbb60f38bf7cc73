package io.graphlane.inference.backend;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.core.GraphlaneException;
import org.junit.jupiter.api.Test;

/** The KV budget is a share of the free memory the backend reports (a GPU's free device memory), given as input. */
class CacheMemoryTest {

    @Test
    void theBudgetTakesTheAskedShareOfTheFreeMemory() {
        long free = 80L << 30; // an H100 after the weights: 80 GiB free
        assertEquals(40L << 30, CacheMemory.defaultBudget(free));
        assertEquals(72L << 30, CacheMemory.budget(free, 0.9));
        assertEquals(free, CacheMemory.budget(free, 1.0));
        assertEquals(1, CacheMemory.budget(0, 0.9), "never zero: a budget of nothing would refuse every request");
        assertEquals(1, CacheMemory.budget(-5, 0.5), "a negative figure counts as nothing free");
    }

    @Test
    void aShareOutsideZeroToOneIsRefusedNamingTheOption() {
        for (double bad : new double[] {0, -0.1, 1.01, Double.NaN}) {
            GraphlaneException e = assertThrows(GraphlaneException.class, () -> CacheMemory.budget(1L << 30, bad));
            assertTrue(e.getMessage().startsWith("--kv-memory-fraction must be in (0, 1], got "), e.getMessage());
        }
    }
}
