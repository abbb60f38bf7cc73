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
 * its rank lost once, while an orderly close reports nothing.
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

    private record Rank(SocketPayloadPlane plane, LinkedBlockingQueue<Envelope> inbox, CompletableFuture<Integer> up) {
    }

    private static Rank rank(String group, int rank) throws Exception {
        LinkedBlockingQueue<Envelope> inbox = new LinkedBlockingQueue<>();
        PeerStatus status = new PeerStatus(group, rank, 2, inbox);
        SocketPayloadPlane plane = SocketPayloadPlane.open(group, rank, 4, 1 << 20, 1000, wire, status, inbox, "127.0.0.1", "127.0.0.1");
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
            hs.putInt(0x474C5043).put((byte) 1).putInt(g.length).put(g).putInt(0).putInt(1).putLong(one.plane().nonce() + 1).flip();
            stray.write(hs);
            ByteBuffer answer = ByteBuffer.allocate(1);
            stray.read(answer);
            assertEquals(0, answer.get(0), "the stray's answer");
        }
        assertTrue(!one.up().isDone(), "no link from a stray");
        zero.plane().connect(1, one.plane().host(), one.plane().port(), one.plane().nonce());
        assertEquals(1, zero.up().get(10, TimeUnit.SECONDS));
        assertEquals(0, one.up().get(10, TimeUnit.SECONDS));
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
        one.plane().consumed(0);
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

    /** Both ranks close in order: each one's goodbye is answered, both closes complete, and neither reports a loss. */
    @Test
    void anOrderlyCloseIsNotALoss() throws Exception {
        Rank one = rank("bye", 1);
        Rank zero = rank("bye", 0);
        zero.plane().connect(1, one.plane().host(), one.plane().port(), one.plane().nonce());
        zero.up().get(10, TimeUnit.SECONDS);
        one.up().get(10, TimeUnit.SECONDS);
        zero.plane().send(1, new CollectiveMessage.Consumed(1, 2));
        zero.plane().closeAsync(20_000).get(20, TimeUnit.SECONDS);
        assertEquals(new Envelope(0, new CollectiveMessage.Consumed(1, 2)), one.inbox().poll(10, TimeUnit.SECONDS),
                "what was sent before the goodbye arrives");
        one.plane().closeAsync(20_000).get(20, TimeUnit.SECONDS);
        assertNull(one.inbox().poll(200, TimeUnit.MILLISECONDS), "no loss reported");
        assertNull(zero.inbox().poll(0, TimeUnit.MILLISECONDS), "no loss reported");
    }
}
