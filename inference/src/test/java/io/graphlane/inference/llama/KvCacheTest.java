package io.graphlane.inference.llama;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.backend.cpu.nn.CpuNeuralOps;
import io.graphlane.backend.cpu.nn.CpuTensor;
import io.graphlane.core.GraphlaneException;
import org.junit.jupiter.api.Test;

/** A request's KV cache refuses positions it cannot hold, whatever their sum, and stays usable afterwards. */
class KvCacheTest {
    private static final CpuNeuralOps OPS = new CpuNeuralOps();

    @Test
    void aStepWhosePositionsPassIntegerMaxValueIsRefusedNamingTheMaximum() {
        KvCache<CpuTensor> cache = new KvCache<>(OPS, 7, 2, 8, 256);
        cache.reserve(0, 10);
        cache.commit(10);
        // 10 + (2^31 - 5) wraps to a negative int: it must still read as past the maximum, not as room to spare.
        GraphlaneException e = assertThrows(GraphlaneException.class, () -> cache.reserve(10, Integer.MAX_VALUE - 5));
        assertTrue(e.getMessage().contains("request 7"), e.getMessage());
        assertTrue(e.getMessage().contains((10L + Integer.MAX_VALUE - 5) + " positions exceed the model's maximum of 256"), e.getMessage());
        assertTrue(e.getMessage().contains("max_position_embeddings"), e.getMessage());
        // Nothing was reserved: the cache holds its 10 positions and takes the next ones in order.
        assertEquals(10, cache.length());
        cache.reserve(10, 246);
        cache.commit(246);
        assertEquals(256, cache.length());
        cache.release();
    }

    @Test
    void aStepOfNoPositionsOrACommitPastTheReservationIsRefused() {
        KvCache<CpuTensor> cache = new KvCache<>(OPS, 3, 1, 4, 128);
        GraphlaneException empty = assertThrows(GraphlaneException.class, () -> cache.reserve(0, 0));
        assertTrue(empty.getMessage().contains("at least one position, got 0"), empty.getMessage());
        assertThrows(GraphlaneException.class, () -> cache.reserve(0, -3));
        cache.reserve(0, 5);
        IllegalStateException past = assertThrows(IllegalStateException.class, () -> cache.commit(Integer.MAX_VALUE));
        assertTrue(past.getMessage().contains("cannot commit " + Integer.MAX_VALUE + " positions after 0"), past.getMessage());
        assertEquals(0, cache.length());
        cache.commit(5);
        assertEquals(5, cache.length());
        cache.release();
    }

    @Test
    void aCacheGrowsNoFurtherThanThePositionsReservedForItsRequest() {
        KvCache<CpuTensor> cache = new KvCache<>(OPS, 9, 2, 8, 2048, 100);
        cache.reserve(0, 70);
        cache.commit(70);
        assertEquals(70, cache.capacity(), "the first allocation holds what the step needs");
        cache.reserve(70, 1);
        assertEquals(100, cache.capacity(), "doubling stops at the reservation, not at the model's 2048 positions");
        cache.commit(1);
        cache.reserve(71, 29);
        cache.commit(29);
        GraphlaneException past = assertThrows(GraphlaneException.class, () -> cache.reserve(100, 1));
        assertTrue(past.getMessage().contains("101 positions exceed the 100 reserved for it at admission"), past.getMessage());
        assertEquals(100, cache.capacity());
        cache.release();
    }
}
