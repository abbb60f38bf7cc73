package io.graphlane.cluster.collective;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.io.TempDir;

/**
 * The laws of {@link SocketPayloadPlaneTest} for two ranks on one host that move their payload through a shared-memory
 * segment: frames in send order, chunks written from the sender's memory and read into buffers given back, a withdrawn
 * write that cannot end closing its link, a socket that ends without a goodbye reported lost once, an orderly close
 * reporting nothing, and every link checked to run through shared memory.
 */
class SharedMemoryPayloadPlaneTest extends SocketPayloadPlaneTest {
    @TempDir
    Path segments;

    @Override
    Path sharedMemory() {
        return segments;
    }

    /** A segment's file is deleted as soon as its offer is answered: none is left behind. */
    @AfterEach
    void noSegmentIsLeftBehind() throws IOException {
        try (Stream<Path> left = Files.list(segments)) {
            assertEquals(0, left.count(), "segment files left in " + segments);
        }
    }

    /**
     * The writer waits for room in the full ring: an exact state, where a slow filesystem under the segment (its pages
     * written for the first time) could otherwise keep the writer short of the full ring past any fixed time.
     */
    @Override
    void awaitWriterStalled(Rank rank, int peer) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!rank.plane().writerAwaitsRoom(peer)) {
            assertTrue(System.nanoTime() < deadline, "the writer to rank " + peer + " fills the ring within 10 s");
            java.util.concurrent.locks.LockSupport.parkNanos(1_000_000);
        }
        assertTrue(!rank.plane().awaitSent(0), "the receiver takes nothing more");
    }

    @Override
    void assertTransport(Rank rank, int peer) {
        assertTrue(rank.plane().sharesMemoryWith(peer), "the link to rank " + peer + " carries its payload through shared memory");
    }
}
