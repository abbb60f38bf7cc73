package io.graphlane.cluster.collective;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.actors.wire.WireFormatException;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
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
 * One pair's shared-memory link without the plane: frames of every size cross both rings in order through many
 * wrap-arounds (short ones read in place, long ones copied out across the end) while the reader gives them back in any
 * order, a reader asleep on an empty ring wakes for the next frame, the stream ends after the last frame written before
 * the writer's shutdown, a writer waiting for room ends with an error once its channel closes, a frame declaring more
 * than the cap is refused naming its size, and a segment is mapped only by whoever presents its token and size.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class SharedMemoryChannelTest {
    private static final int RING = SharedMemorySegment.MIN_RING;

    /** A thread per task: the tasks block on each other, which a small common pool could not run at once. */
    private static final java.util.concurrent.ExecutorService THREADS = java.util.concurrent.Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "shared-memory-test");
        t.setDaemon(true);
        return t;
    });

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

    /** A frame: its 4-byte length, then {@code body}, split at {@code split} into a heap head and a direct payload. */
    private static ByteBuffer[] frame(byte[] body, int split) {
        ByteBuffer head = ByteBuffer.allocate(4 + split).order(ByteOrder.LITTLE_ENDIAN);
        head.putInt(body.length).put(body, 0, split).flip();
        if (split == body.length) {
            return new ByteBuffer[] {head, null};
        }
        ByteBuffer payload = ByteBuffer.allocateDirect(body.length - split).put(body, split, body.length - split).flip();
        return new ByteBuffer[] {head, payload};
    }

    /** Random bodies: mostly short frames read in place, some longer than half the ring (copied out, across the end). */
    private static byte[][] bodies(long seed, int count) {
        SplittableRandom random = new SplittableRandom(seed);
        byte[][] bodies = new byte[count][];
        for (int i = 0; i < count; i++) {
            int length = random.nextInt(10) == 0 ? RING / 2 + random.nextInt(3 * RING) : 1 + random.nextInt(RING / 2 - 4);
            bodies[i] = new byte[length];
            random.nextBytes(bodies[i]);
        }
        return bodies;
    }

    /** Writes {@code bodies} as frames, each split at a random place, then shuts the output down. */
    private static CompletableFuture<Void> writeAll(SharedMemoryChannel ch, byte[][] bodies, long seed) {
        return CompletableFuture.runAsync(() -> {
            SplittableRandom random = new SplittableRandom(seed);
            try {
                for (byte[] body : bodies) {
                    ByteBuffer[] f = frame(body, random.nextInt(body.length + 1));
                    ch.writeFrame(f[0], f[1]);
                }
                ch.shutdownOutput();
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }, THREADS);
    }

    /**
     * Reads frames until the end, checking each against {@code bodies}, and gives them back as a member would: another
     * thread takes what has arrived, gives it back in a random order, and waits for more only once it holds nothing
     * (so the writer's room, which returns only up to the oldest frame held, never waits on a frame not yet read); the
     * count read.
     */
    private static CompletableFuture<Integer> readAll(SharedMemoryChannel ch, byte[][] bodies, long seed) {
        java.util.concurrent.LinkedBlockingQueue<SharedMemoryChannel.Frame> arrived = new java.util.concurrent.LinkedBlockingQueue<>();
        SharedMemoryChannel.Frame last = new SharedMemoryChannel.Frame(null, -1);
        CompletableFuture<Void> member = CompletableFuture.runAsync(() -> {
            SplittableRandom random = new SplittableRandom(seed);
            java.util.List<SharedMemoryChannel.Frame> held = new java.util.ArrayList<>();
            try {
                while (true) {
                    held.add(arrived.take());
                    arrived.drainTo(held);
                    boolean done = held.remove(last);
                    while (!held.isEmpty()) {
                        ch.release(held.remove(random.nextInt(held.size())).end());
                    }
                    if (done) {
                        return;
                    }
                }
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        }, THREADS);
        return CompletableFuture.supplyAsync(() -> {
            int count = 0;
            try {
                while (true) {
                    SharedMemoryChannel.Frame f = ch.readFrame(4 * RING);
                    if (f == null) {
                        break;
                    }
                    byte[] got = new byte[f.body().remaining()];
                    f.body().get(f.body().position(), got);
                    assertArrayEquals(bodies[count], got, "frame " + count);
                    count++;
                    arrived.add(f);
                }
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
            arrived.add(last);
            return count;
        }, THREADS).thenCombine(member, (count, v) -> count);
    }

    @Test
    void framesCrossBothRingsInOrderThroughWrapAroundsAndEndAfterTheLast() throws Exception {
        Pair pair = pair();
        byte[][] up = bodies(1, 600);
        byte[][] down = bodies(2, 300);
        CompletableFuture<Integer> upRead = readAll(pair.higher(), up, 3);
        CompletableFuture<Integer> downRead = readAll(pair.lower(), down, 4);
        CompletableFuture<Void> upWritten = writeAll(pair.lower(), up, 5);
        CompletableFuture<Void> downWritten = writeAll(pair.higher(), down, 6);
        CompletableFuture.allOf(upWritten, downWritten).get(30, TimeUnit.SECONDS);
        assertEquals(up.length, upRead.get(30, TimeUnit.SECONDS), "upward: every frame, in order, then the end");
        assertEquals(down.length, downRead.get(30, TimeUnit.SECONDS), "downward: every frame, in order, then the end");
        pair.lower().close();
        pair.higher().close();
    }

    /**
     * A reader that found nothing sleeps on its doorbell; a frame written afterwards wakes it. Each frame is written only
     * once the reader has the previous one, so most reads find the ring empty and sleep.
     */
    @Test
    void aSleepingReaderWakesForEachFrame() throws Exception {
        Pair pair = pair();
        for (int i = 0; i < 200; i++) {
            CompletableFuture<SharedMemoryChannel.Frame> read = CompletableFuture.supplyAsync(() -> {
                try {
                    return pair.higher().readFrame(RING);
                } catch (IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            }, THREADS);
            ByteBuffer[] f = frame(new byte[] {(byte) i}, 1);
            pair.lower().writeFrame(f[0], f[1]);
            SharedMemoryChannel.Frame got = read.get(10, TimeUnit.SECONDS);
            assertEquals((byte) i, got.body().get(got.body().position()), "frame " + i + " woke the reader");
            pair.higher().release(got.end());
        }
        pair.lower().close();
        pair.higher().close();
    }

    /** A writer waiting for room (nobody reads) fails once its channel is closed, instead of waiting on. */
    @Test
    void aWriterWaitingForRoomEndsWhenItsChannelCloses() throws Exception {
        Pair pair = pair();
        CompletableFuture<Void> writing = CompletableFuture.runAsync(() -> {
            try {
                while (true) {
                    ByteBuffer[] f = frame(new byte[1000], 10);
                    pair.lower().writeFrame(f[0], f[1]);
                }
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }, THREADS);
        pair.lower().close();
        java.util.concurrent.ExecutionException failed = assertThrows(java.util.concurrent.ExecutionException.class,
                () -> writing.get(10, TimeUnit.SECONDS));
        assertEquals(ClosedChannelException.class, failed.getCause().getCause().getClass());
        pair.higher().close();
    }

    /** A frame declaring more than the reader's cap is refused naming its size, before anything is read for it. */
    @Test
    void aFrameDeclaringMoreThanTheCapIsRefusedNamingItsSize() throws Exception {
        Pair pair = pair();
        ByteBuffer lie = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putInt(Integer.MAX_VALUE).putInt(0).flip();
        pair.lower().writeFrame(lie, null);
        WireFormatException refused = assertThrows(WireFormatException.class, () -> pair.higher().readFrame(RING));
        assertTrue(refused.getMessage().contains("a payload frame of 2147483647 bytes in shared memory; expected 1.." + RING),
                refused.getMessage());
        pair.lower().close();
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
