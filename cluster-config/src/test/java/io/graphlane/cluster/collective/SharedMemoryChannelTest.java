package io.graphlane.cluster.collective;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * One pair's shared-memory link without the plane: bytes cross both rings in order through many wrap-arounds whatever
 * the sizes of the writes and reads, a reader asleep on an empty ring wakes for the next write, the stream ends after
 * the last byte written before the writer's shutdown, a writer waiting for room ends with an error once its channel
 * closes, and a segment is mapped only by whoever presents its token and size.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class SharedMemoryChannelTest {
    private static final int RING = SharedMemorySegment.MIN_RING;

    @TempDir
    Path dir;

    /** Both ends of one link: the lower rank's channel and the higher rank's, over one socket pair and one segment. */
    private record Pair(SharedMemoryChannel lower, SharedMemoryChannel higher) {
    }

    private Pair pair() throws IOException {
        try (ServerSocketChannel server = ServerSocketChannel.open()) {
            server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            SocketChannel a = SocketChannel.open(server.getLocalAddress());
            SocketChannel b = server.accept();
            SharedMemorySegment created = SharedMemorySegment.create(dir, RING);
            SharedMemorySegment mapped = SharedMemorySegment.open(created.path(), created.token(), RING);
            assertNotNull(mapped, "the segment maps with its own token and size");
            created.delete();
            return new Pair(new SharedMemoryChannel(new PlainPayloadChannel(a, "a"), created, true),
                    new SharedMemoryChannel(new PlainPayloadChannel(b, "b"), mapped, false));
        }
    }

    /** Sends {@code bytes} in writes of random sizes, then shuts the output down. */
    private static CompletableFuture<Void> writeAll(SharedMemoryChannel ch, byte[] bytes, long seed) {
        return CompletableFuture.runAsync(() -> {
            SplittableRandom random = new SplittableRandom(seed);
            ByteBuffer direct = ByteBuffer.allocateDirect(bytes.length).put(bytes).flip();
            try {
                while (direct.hasRemaining()) {
                    ByteBuffer piece = direct.slice(direct.position(), Math.min(direct.remaining(), 1 + random.nextInt(3 * RING)));
                    while (piece.hasRemaining()) {
                        ch.write(piece);
                    }
                    direct.position(direct.position() + piece.position());
                }
                ch.shutdownOutput();
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        });
    }

    /** Reads until the end of the stream in reads of random sizes; everything read. */
    private static CompletableFuture<byte[]> readAll(SharedMemoryChannel ch, int expected, long seed) {
        return CompletableFuture.supplyAsync(() -> {
            SplittableRandom random = new SplittableRandom(seed);
            ByteBuffer into = ByteBuffer.allocate(expected + 1);
            try {
                while (true) {
                    ByteBuffer piece = into.slice(into.position(), Math.min(into.remaining(), 1 + random.nextInt(2 * RING)));
                    int n = ch.read(piece);
                    if (n < 0) {
                        break;
                    }
                    into.position(into.position() + n);
                }
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
            byte[] got = new byte[into.position()];
            into.flip().get(got);
            return got;
        });
    }

    @Test
    void bytesCrossBothRingsInOrderThroughWrapAroundsAndEndAfterTheLast() throws Exception {
        Pair pair = pair();
        byte[] up = new byte[40 * RING + 12_345];
        byte[] down = new byte[17 * RING + 7];
        new SplittableRandom(1).nextBytes(up);
        new SplittableRandom(2).nextBytes(down);
        CompletableFuture<byte[]> upRead = readAll(pair.higher(), up.length, 3);
        CompletableFuture<byte[]> downRead = readAll(pair.lower(), down.length, 4);
        CompletableFuture<Void> upWritten = writeAll(pair.lower(), up, 5);
        CompletableFuture<Void> downWritten = writeAll(pair.higher(), down, 6);
        CompletableFuture.allOf(upWritten, downWritten).get(30, TimeUnit.SECONDS);
        assertArrayEquals(up, upRead.get(30, TimeUnit.SECONDS), "upward: every byte, in order, then the end");
        assertArrayEquals(down, downRead.get(30, TimeUnit.SECONDS), "downward: every byte, in order, then the end");
        pair.lower().close();
        pair.higher().close();
    }

    /**
     * A reader that found nothing sleeps on its doorbell; a single byte written afterwards wakes it. Each byte is written
     * only once the reader has the previous one, so most reads find the ring empty and sleep.
     */
    @Test
    void aSleepingReaderWakesForEachWrite() throws Exception {
        Pair pair = pair();
        ByteBuffer one = ByteBuffer.allocate(1);
        ByteBuffer got = ByteBuffer.allocate(1);
        for (int i = 0; i < 200; i++) {
            CompletableFuture<Integer> read = CompletableFuture.supplyAsync(() -> {
                try {
                    got.clear();
                    return pair.higher().read(got);
                } catch (IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            });
            one.clear();
            one.put((byte) i).flip();
            assertEquals(1, pair.lower().write(one));
            assertEquals(1, read.get(10, TimeUnit.SECONDS), "byte " + i + " woke the reader");
            assertEquals((byte) i, got.get(0));
        }
        pair.lower().close();
        pair.higher().close();
    }

    /** A writer waiting for room (nobody reads) fails once its channel is closed, instead of waiting on. */
    @Test
    void aWriterWaitingForRoomEndsWhenItsChannelCloses() throws Exception {
        Pair pair = pair();
        ByteBuffer fill = ByteBuffer.allocateDirect(RING);
        while (fill.hasRemaining()) {
            pair.lower().write(fill);
        }
        CompletableFuture<Integer> blocked = CompletableFuture.supplyAsync(() -> {
            try {
                return pair.lower().write(ByteBuffer.allocate(10));
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        });
        pair.lower().close();
        java.util.concurrent.ExecutionException failed = assertThrows(java.util.concurrent.ExecutionException.class,
                () -> blocked.get(10, TimeUnit.SECONDS));
        assertEquals(ClosedChannelException.class, failed.getCause().getCause().getClass());
        pair.higher().close();
    }

    /** A segment maps only with its own token and ring size; another path, token or size is refused. */
    @Test
    void aSegmentMapsOnlyWithItsTokenAndSize() throws Exception {
        SharedMemorySegment created = SharedMemorySegment.create(dir, RING);
        try {
            assertNull(SharedMemorySegment.open(created.path(), created.token() + 1, RING), "another token");
            assertNull(SharedMemorySegment.open(created.path(), created.token(), 2 * RING), "another ring size");
            assertNull(SharedMemorySegment.open(created.path(), created.token(), RING + 1), "not a power of two");
            assertNull(SharedMemorySegment.open(dir.resolve("absent"), created.token(), RING), "no such file");
            Path other = Files.write(dir.resolve("other"), new byte[(int) SharedMemorySegment.size(RING)]);
            assertNull(SharedMemorySegment.open(other, created.token(), RING), "a file of the right size without the token");
            assertNotNull(SharedMemorySegment.open(created.path(), created.token(), RING));
        } finally {
            created.delete();
        }
    }
}
