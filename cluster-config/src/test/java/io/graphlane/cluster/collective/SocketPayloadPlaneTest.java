package io.graphlane.cluster.collective;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import io.graphlane.backend.cpu.collective.CollectiveMessage;
import io.graphlane.backend.cpu.collective.CollectiveTransport.Envelope;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.ExtendedActorSystem;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Two ranks' socket planes in one JVM, without the rank actors: a stray connection is refused, the lower rank's
 * connection is accepted, frames of every kind arrive in send order, and a socket that ends without a goodbye reports
 * its rank lost once, while an orderly close reports nothing. Declared sizes (a handshake's group name, a frame's
 * length, a chunk's float count) are checked before anything is allocated for them.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class SocketPayloadPlaneTest {
    private static ActorSystem<Void> system;
    private static CollectiveWireSerializer wire;

    @BeforeAll
    static void start() {
        system = ActorSystem.create(Behaviors.empty(), "plane-test", ConfigFactory.parseString("pekko.loglevel = WARNING")
                .withFallback(ConfigFactory.load()));
        wire = new CollectiveWireSerializer((ExtendedActorSystem) Adapter.toClassic(system));
    }

    @AfterAll
    static void stop() throws Exception {
        system.terminate();
        system.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
    }

    /** One rank of a 2-rank group's plane, its inbox, and the peer whose link came up (or why it failed). */
    record Rank(SocketPayloadPlane plane, LinkedBlockingQueue<Envelope> inbox, CompletableFuture<Integer> up) {
    }

    /** Where the ranks of these tests create shared-memory segments: none here, so every payload takes its socket. */
    java.nio.file.Path sharedMemory() {
        return null;
    }

    /** Checks after a link came up that it runs on the transport these tests are about (here: the socket's own bytes). */
    void assertTransport(Rank rank, int peer) {
        assertTrue(!rank.plane().sharesMemoryWith(peer), "the link to rank " + peer + " carries its payload on the socket");
    }

    private Rank rank(String group, int rank) throws Exception {
        return rank(wire, group, rank, 4, 1000, null, sharedMemory());
    }

    private Rank rank(String group, int rank, int window, int chunkFloats) throws Exception {
        return rank(wire, group, rank, window, chunkFloats, null, sharedMemory());
    }

    /**
     * Rank {@code rank} of a 2-rank group on loopback, framing with {@code wire}, over TLS when {@code tls} is given,
     * offering and taking shared-memory segments in {@code sharedMemory} when it is not null.
     */
    static Rank rank(CollectiveWireSerializer wire, String group, int rank, int chunkFloats, PayloadTls tls, java.nio.file.Path sharedMemory)
            throws Exception {
        return rank(wire, group, rank, 4, chunkFloats, tls, sharedMemory);
    }

    private static Rank rank(CollectiveWireSerializer wire, String group, int rank, int window, int chunkFloats, PayloadTls tls,
                             java.nio.file.Path sharedMemory) throws Exception {
        LinkedBlockingQueue<Envelope> inbox = new LinkedBlockingQueue<>();
        PeerStatus status = new PeerStatus(group, rank, 2, inbox);
        SocketPayloadPlane plane = SocketPayloadPlane.open(group, rank, window, 1 << 20, chunkFloats, wire, status, inbox, "127.0.0.1",
                "127.0.0.1", tls, sharedMemory);
        CompletableFuture<Integer> up = new CompletableFuture<>();
        plane.start(new SocketPayloadPlane.Listener() {
            @Override
            public void linkUp(int peer) {
                up.complete(peer);
            }

            @Override
            public void linkFailed(int peer, String why) {
                up.completeExceptionally(new AssertionError(why));
            }
        });
        return new Rank(plane, inbox, up);
    }

    /** A connection naming the right group and rank with another join's nonce gets a refusal byte and no link. */
    @Test
    void aStrayIsRefusedAndTheLowerRankIsLinkedInOrder() throws Exception {
        Rank one = rank("pair", 1);
        Rank zero = rank("pair", 0);
        try (SocketChannel stray = SocketChannel.open(new InetSocketAddress("127.0.0.1", one.plane().port()))) {
            byte[] g = "pair".getBytes(StandardCharsets.UTF_8);
            ByteBuffer hs = ByteBuffer.allocate(4 + 1 + 4 + g.length + 16);
            hs.putInt(0x474C5043).put((byte) 2).putInt(g.length).put(g).putInt(0).putInt(1).putLong(one.plane().nonce() + 1).flip();
            stray.write(hs);
            ByteBuffer answer = ByteBuffer.allocate(1);
            stray.read(answer);
            assertEquals(0, answer.get(0), "the stray's answer");
        }
        assertTrue(!one.up().isDone(), "no link from a stray");
        zero.plane().connect(1, one.plane().host(), one.plane().port(), one.plane().nonce());
        assertEquals(1, zero.up().get(10, TimeUnit.SECONDS));
        assertEquals(0, one.up().get(10, TimeUnit.SECONDS));
        assertTransport(zero, 1);
        assertTransport(one, 0);
        float[] floats = new float[1000];
        for (int i = 0; i < floats.length; i++) {
            floats[i] = i * 0.5f;
        }
        zero.plane().send(1, new CollectiveMessage.Chunk(3, 0, FloatBuffer.wrap(floats), null));
        zero.plane().send(1, new CollectiveMessage.Consumed(3, 0));
        zero.plane().send(1, new CollectiveMessage.Left(0, "member 0 failed"));
        CollectiveMessage.Chunk chunk = assertInstanceOf(CollectiveMessage.Chunk.class, one.inbox().poll(10, TimeUnit.SECONDS).message());
        float[] got = new float[1000];
        chunk.values().get(0, got);
        assertArrayEquals(floats, got);
        one.plane().consumed(0, chunk);
        assertEquals(new Envelope(0, new CollectiveMessage.Consumed(3, 0)), one.inbox().poll(10, TimeUnit.SECONDS));
        assertEquals(new Envelope(0, new CollectiveMessage.Left(0, "member 0 failed")), one.inbox().poll(10, TimeUnit.SECONDS));
        // Rank 0 goes away without a goodbye: rank 1 hears of it once, naming rank 0.
        zero.plane().abort();
        Envelope lost = one.inbox().poll(10, TimeUnit.SECONDS);
        CollectiveMessage.Left left = assertInstanceOf(CollectiveMessage.Left.class, lost.message());
        assertEquals(0, left.member());
        assertTrue(left.reason().contains("member 0 of collective group pair was lost")
                && left.reason().contains("payload socket"), left.reason());
        assertNull(one.inbox().poll(200, TimeUnit.MILLISECONDS), "one loss, reported once");
        one.plane().abort();
    }

    /**
     * Chunks in direct little-endian memory (as a CPU tensor's are) are written from it: once awaitSent returns, the
     * sender may overwrite its storage and the receiver still reads what was sent, from a view of the buffer its socket
     * was read into; buffers given back are read into again, so three windows of chunks pass through a window of four.
     */
    @Test
    void chunksAreWrittenFromTheSendersMemoryAndReadIntoBuffersGivenBack() throws Exception {
        Rank one = rank("zero-copy", 1);
        Rank zero = rank("zero-copy", 0);
        zero.plane().connect(1, one.plane().host(), one.plane().port(), one.plane().nonce());
        zero.up().get(10, TimeUnit.SECONDS);
        one.up().get(10, TimeUnit.SECONDS);
        assertTransport(zero, 1);
        assertTransport(one, 0);
        FloatBuffer storage = ByteBuffer.allocateDirect(1000 * Float.BYTES).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer();
        try {
            for (int c = 0; c < 12; c++) {
                for (int i = 0; i < 1000; i++) {
                    storage.put(i, c * 1000 + i);
                }
                zero.plane().send(1, new CollectiveMessage.Chunk(1, c * 1000L, storage.slice(0, 1000 - c).asReadOnlyBuffer(), null));
                assertTrue(zero.plane().awaitSent(TimeUnit.SECONDS.toNanos(10)), "chunk " + c + " written");
                // The sender may change its storage now: what was sent is on its way already.
                for (int i = 0; i < 1000; i++) {
                    storage.put(i, -1);
                }
                Envelope e = one.inbox().poll(10, TimeUnit.SECONDS);
                assertTrue(e != null, "chunk " + c + " received");
                CollectiveMessage.Chunk chunk = assertInstanceOf(CollectiveMessage.Chunk.class, e.message());
                assertEquals(c * 1000L, chunk.offset());
                assertEquals(1000 - c, chunk.values().remaining());
                assertTrue(chunk.values().isDirect(), "a view of the receive buffer, not a copy on the heap");
                for (int i = 0; i < 1000 - c; i++) {
                    assertEquals(c * 1000 + i, chunk.values().get(i), "chunk " + c + " float " + i);
                }
                one.plane().consumed(0, chunk);
            }
        } finally {
            zero.plane().abort();
            one.plane().abort();
        }
    }

    /**
     * A failed member withdraws what it sent from its memory: with the receiver not reading, awaitSent runs out of time,
     * and withdrawSent, unable to stop the write under way, closes the link, so the writer reads that memory no more
     * and the receiver hears of the loss.
     */
    @Test
    void aWithdrawnWriteThatCannotEndClosesItsLink() throws Exception {
        Rank one = rank("withdraw", 1, 1, 1 << 20);
        Rank zero = rank("withdraw", 0, 1, 1 << 20);
        zero.plane().connect(1, one.plane().host(), one.plane().port(), one.plane().nonce());
        zero.up().get(10, TimeUnit.SECONDS);
        one.up().get(10, TimeUnit.SECONDS);
        assertTransport(zero, 1);
        assertTransport(one, 0);
        FloatBuffer storage = ByteBuffer.allocateDirect((1 << 20) * Float.BYTES).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer();
        try {
            // One chunk fills the receiver's window; the others fill the socket buffers (1 MiB each way), or the shared
            // ring (room for 7 of these chunks), and stall the writer.
            for (int c = 0; c < 12; c++) {
                zero.plane().send(1, new CollectiveMessage.Chunk(1, (long) c << 20, storage.slice(0, 1 << 20).asReadOnlyBuffer(), null));
            }
            awaitWriterStalled(zero, 1);
            zero.plane().withdrawSent(TimeUnit.MILLISECONDS.toNanos(300));
            assertTrue(zero.plane().awaitSent(0), "nothing reads the sender's memory after withdrawSent");
            CollectiveMessage.Chunk first = assertInstanceOf(CollectiveMessage.Chunk.class, one.inbox().poll(10, TimeUnit.SECONDS).message());
            one.plane().consumed(0, first);
            // Chunks wholly written before the link closed may still arrive (from the shared ring); then the loss.
            Envelope lost = one.inbox().poll(10, TimeUnit.SECONDS);
            for (int c = 1; lost != null && lost.message() instanceof CollectiveMessage.Chunk chunk && c < 12; c++) {
                one.plane().consumed(0, chunk);
                lost = one.inbox().poll(10, TimeUnit.SECONDS);
            }
            assertTrue(lost != null, "the receiver hears of the closed link");
            assertEquals(0, assertInstanceOf(CollectiveMessage.Left.class, lost.message()).member());
        } finally {
            zero.plane().abort();
            one.plane().abort();
        }
    }

    /**
     * Returns once the writer of {@code rank} to {@code peer} is stalled in a write that cannot end while the peer's
     * member holds what it has. On a socket the blocked write is in the kernel, out of sight: the chunks not being sent
     * within 300 ms stands for it.
     */
    void awaitWriterStalled(Rank rank, int peer) throws InterruptedException {
        assertTrue(!rank.plane().awaitSent(TimeUnit.MILLISECONDS.toNanos(300)), "the receiver takes nothing more");
    }

    /** Both ranks close in order: each one's goodbye is answered, both closes complete, and neither reports a loss. */
    @Test
    void anOrderlyCloseIsNotALoss() throws Exception {
        Rank one = rank("bye", 1);
        Rank zero = rank("bye", 0);
        zero.plane().connect(1, one.plane().host(), one.plane().port(), one.plane().nonce());
        zero.up().get(10, TimeUnit.SECONDS);
        one.up().get(10, TimeUnit.SECONDS);
        assertTransport(zero, 1);
        assertTransport(one, 0);
        zero.plane().send(1, new CollectiveMessage.Consumed(1, 2));
        zero.plane().closeAsync(20_000).get(20, TimeUnit.SECONDS);
        assertEquals(new Envelope(0, new CollectiveMessage.Consumed(1, 2)), one.inbox().poll(10, TimeUnit.SECONDS),
                "what was sent before the goodbye arrives");
        one.plane().closeAsync(20_000).get(20, TimeUnit.SECONDS);
        assertNull(one.inbox().poll(200, TimeUnit.MILLISECONDS), "no loss reported");
        assertNull(zero.inbox().poll(0, TimeUnit.MILLISECONDS), "no loss reported");
    }

    /** A handshake declaring a 2^31-1 byte group name is refused before the name is read; the real rank 0 still links. */
    @Test
    void aHandshakeDeclaringAHugeGroupNameIsRefused() throws Exception {
        Rank one = rank("huge-name", 1);
        try (SocketChannel ch = SocketChannel.open(new InetSocketAddress("127.0.0.1", one.plane().port()))) {
            assertEquals(0, handshake(ch, one, "huge-name", Integer.MAX_VALUE), "the answer to a 2^31-1 byte group name");
        }
        assertTrue(!one.up().isDone(), "no link");
        try (SocketChannel ch = SocketChannel.open(new InetSocketAddress("127.0.0.1", one.plane().port()))) {
            assertEquals(1, handshake(ch, one, "huge-name", "huge-name".length()));
            assertEquals(0, one.up().get(10, TimeUnit.SECONDS));
        } finally {
            one.plane().abort();
        }
    }

    /**
     * The hostile-peer suite on a payload port while its group forms: handshakes declaring group names of 0, -1, -5 and
     * 2^31-1 bytes, a truncated handshake, garbage and a silent connection. Each is refused (the silent one is still
     * open when the real rank links), the real rank 0 links and carries a frame, and the refusals cost one warning.
     */
    @Test
    void hostileHandshakesNeitherLinkNorDelayTheRealRank() throws Exception {
        ch.qos.logback.classic.Logger logger = (ch.qos.logback.classic.Logger) org.slf4j.LoggerFactory.getLogger(SocketPayloadPlane.class);
        ch.qos.logback.core.read.ListAppender<ch.qos.logback.classic.spi.ILoggingEvent> log = new ch.qos.logback.core.read.ListAppender<>();
        log.start();
        logger.addAppender(log);
        Rank one = rank("hostile", 1);
        InetSocketAddress port = new InetSocketAddress("127.0.0.1", one.plane().port());
        try (SocketChannel silent = SocketChannel.open(port)) {
            for (int declared : new int[] {0, -1, -5, Integer.MAX_VALUE}) {
                try (SocketChannel ch = SocketChannel.open(port)) {
                    assertEquals(0, handshake(ch, one, "hostile", declared), "the answer to a group name of " + declared + " bytes");
                }
            }
            try (SocketChannel truncated = SocketChannel.open(port)) {
                truncated.write(ByteBuffer.wrap(new byte[] {0x47, 0x4C, 0x50}));
            }
            try (SocketChannel garbage = SocketChannel.open(port)) {
                byte[] noise = new byte[512];
                new java.util.Random(3).nextBytes(noise);
                garbage.write(ByteBuffer.wrap(noise));
                ByteBuffer answer = ByteBuffer.allocate(1);
                assertTrue(garbage.read(answer) <= 0 || answer.get(0) == 0, "garbage gets a refusal or the connection's end");
            }
            assertTrue(!one.up().isDone(), "no link from any of them");
            Rank zero = rank("hostile", 0);
            zero.plane().connect(1, one.plane().host(), one.plane().port(), one.plane().nonce());
            assertEquals(0, one.up().get(10, TimeUnit.SECONDS), "the real rank links while a silent connection is open");
            assertEquals(1, zero.up().get(10, TimeUnit.SECONDS));
            zero.plane().send(1, new CollectiveMessage.Consumed(7, 0));
            assertEquals(new Envelope(0, new CollectiveMessage.Consumed(7, 0)), one.inbox().poll(10, TimeUnit.SECONDS));
            zero.plane().abort();
        } finally {
            one.plane().abort();
            logger.detachAppender(log);
        }
        long warnings = log.list.stream().filter(e -> e.getLevel() == ch.qos.logback.classic.Level.WARN).count();
        assertEquals(1, warnings, "six refusals within 10 s: one warning " + log.list);
    }

    /**
     * A linked peer whose frame header declares more than the cap, or whose frame declares more floats than it holds,
     * is reported lost, naming the size, before anything is allocated for it.
     */
    @Test
    void aFrameDeclaringMoreThanItsCapOrItsBytesIsALossNamingTheSize() throws Exception {
        // Deliver (id 211) from rank 0: a chunk (tag 1), sequence 0, offset 0, then 2^31-1 floats it does not hold.
        byte[] chunkBomb = {(byte) 0xD5, 0x01, 0, 1, 0, 0, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, 0x07, 0, 0, 0, 0};
        ByteBuffer bomb = ByteBuffer.allocate(4 + chunkBomb.length).order(ByteOrder.LITTLE_ENDIAN);
        bomb.putInt(chunkBomb.length).put(chunkBomb).flip();
        ByteBuffer hugeHeader = ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt(0, Integer.MAX_VALUE);
        assertTrue(lossAfter(hugeHeader).contains("a payload frame of 2147483647 bytes; expected 1.."));
        assertTrue(lossAfter(bomb).contains("Deliver.chunk.floats: declares 2147483647 elements of 4 bytes but the frame has 4 left"));
    }

    /** The reason of the loss rank 1 reports once a linked rank 0 sent {@code bytes}. */
    private String lossAfter(ByteBuffer bytes) throws Exception {
        Rank one = rank("bounds", 1);
        try (SocketChannel ch = SocketChannel.open(new InetSocketAddress("127.0.0.1", one.plane().port()))) {
            assertEquals(1, handshake(ch, one, "bounds", "bounds".length()));
            ch.write(bytes);
            Envelope lost = one.inbox().poll(20, TimeUnit.SECONDS);
            assertTrue(lost != null, "a loss reported");
            return assertInstanceOf(CollectiveMessage.Left.class, lost.message()).reason();
        } finally {
            one.plane().abort();
        }
    }

    /** Sends rank 0's handshake to {@code to}, declaring {@code groupBytes} for the name; the answer byte. */
    private static byte handshake(SocketChannel ch, Rank to, String group, int groupBytes) throws Exception {
        byte[] g = group.getBytes(StandardCharsets.UTF_8);
        ByteBuffer hs = ByteBuffer.allocate(4 + 1 + 4 + g.length + 16);
        hs.putInt(0x474C5043).put((byte) 2).putInt(groupBytes).put(g).putInt(0).putInt(1).putLong(to.plane().nonce()).flip();
        while (hs.hasRemaining()) {
            ch.write(hs);
        }
        ByteBuffer answer = ByteBuffer.allocate(1);
        ch.read(answer);
        if (answer.get(0) == 1) {
            // No shared-memory offer: the payload takes this socket.
            ByteBuffer none = ByteBuffer.allocate(4);
            while (none.hasRemaining()) {
                ch.write(none);
            }
        }
        return answer.get(0);
    }
}
