package io.graphlane.backend.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.junit.jupiter.api.Test;

/** The pinned-buffer pool's rules, on plain host objects: reuse by size class, frees only on the freer, never on the returner. */
class HostBufferPoolTest {
    /** A stand-in for a pinned buffer: its size and whether it was freed. */
    private static final class Block {
        final long bytes;
        volatile boolean freed;

        Block(long bytes) {
            this.bytes = bytes;
        }
    }

    private final List<Block> allocated = new ArrayList<>();
    /** Frees run only when the test runs them, as a freer thread would later. */
    private final ConcurrentLinkedQueue<Runnable> freer = new ConcurrentLinkedQueue<>();

    private HostBufferPool<Block> pool(long maxIdleBytes) {
        return new HostBufferPool<>("test", bytes -> {
            Block b = new Block(bytes);
            allocated.add(b);
            return b;
        }, b -> b.bytes, b -> b.freed = true, freer::add, maxIdleBytes);
    }

    @Test
    void aReturnedBufferIsReusedForTheSameSizeClassWithoutAllocatingOrFreeing() {
        HostBufferPool<Block> pool = pool(1 << 20);
        HostBufferPool<Block>.Lease first = pool.acquire(1000 * Float.BYTES);
        Block block = first.buffer();
        assertEquals(4096, block.bytes, "4000 bytes round up to the 4 KiB class");
        first.close();
        first.close(); // a second close does nothing
        HostBufferPool<Block>.Lease second = pool.acquire(3000);
        assertSame(block, second.buffer());
        assertEquals(1, pool.allocations());
        assertTrue(freer.isEmpty(), "nothing is freed while the pool keeps the buffer");
        assertThrows(IllegalStateException.class, first::buffer, "a returned lease refuses its buffer");
    }

    @Test
    void differentSizeClassesDoNotShareBuffers() {
        HostBufferPool<Block> pool = pool(1 << 20);
        HostBufferPool<Block>.Lease small = pool.acquire(4096);
        Block smallBlock = small.buffer();
        small.close();
        HostBufferPool<Block>.Lease large = pool.acquire(4097);
        assertEquals(8192, large.buffer().bytes);
        assertNotSame(smallBlock, large.buffer());
        assertEquals(2, pool.allocations());
    }

    @Test
    void buffersBeyondTheIdleLimitAreFreedOnTheFreerNotOnTheReturningThread() {
        HostBufferPool<Block> pool = pool(8192);
        List<HostBufferPool<Block>.Lease> leases = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            leases.add(pool.acquire(4096));
        }
        leases.forEach(HostBufferPool.Lease::close);
        assertEquals(8192, pool.idleBytes(), "two 4 KiB buffers stay idle");
        assertEquals(1, freer.size(), "the third goes to the freer");
        assertTrue(allocated.stream().noneMatch(b -> b.freed), "not freed on the returning thread");
        freer.poll().run();
        assertEquals(1, allocated.stream().filter(b -> b.freed).count());
    }

    @Test
    void closingThePoolFreesIdleBuffersAndLaterReturnsOnTheFreer() {
        HostBufferPool<Block> pool = pool(1 << 20);
        HostBufferPool<Block>.Lease idle = pool.acquire(100);
        HostBufferPool<Block>.Lease held = pool.acquire(100);
        idle.close();
        pool.close();
        assertEquals(1, freer.size());
        assertThrows(IllegalStateException.class, () -> pool.acquire(1));
        held.close();
        assertEquals(2, freer.size(), "a lease returned after close is freed, not kept");
        freer.forEach(Runnable::run);
        assertTrue(allocated.stream().allMatch(b -> b.freed));
    }

    @Test
    void sizeClassesArePowersOfTwoFromFourKiB() {
        assertEquals(4096, HostBufferPool.sizeClass(0));
        assertEquals(4096, HostBufferPool.sizeClass(4096));
        assertEquals(8192, HostBufferPool.sizeClass(4097));
        assertEquals(1L << 30, HostBufferPool.sizeClass((1L << 29) + 1));
        assertThrows(IllegalArgumentException.class, () -> HostBufferPool.sizeClass(-1));
    }
}
