package io.graphlane.cluster.collective;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import io.graphlane.backend.cpu.collective.CollectiveMessage;
import io.graphlane.backend.cpu.collective.CollectiveTransport.Envelope;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
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
 * A payload socket's sizes are checked before anything is allocated for them: a handshake declaring a huge group name
 * is refused, and a linked peer whose frame declares more than the cap, or whose Kryo frame declares more than it
 * holds, is reported lost naming the size.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class SocketPayloadBoundsTest {
    private static final String GROUP = "bounds";
    private static ActorSystem<Void> system;
    private static CollectiveWireSerializer wire;

    @BeforeAll
    static void start() {
        system = ActorSystem.create(Behaviors.empty(), "plane-bounds", ConfigFactory.parseString("pekko.loglevel = WARNING")
                .withFallback(ConfigFactory.load()));
        wire = new CollectiveWireSerializer((ExtendedActorSystem) Adapter.toClassic(system));
    }

    @AfterAll
    static void stop() throws Exception {
        system.terminate();
        system.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
    }

    /** Rank 1 of a pair, accepting; {@code inbox} hears of losses. */
    private record Receiver(SocketPayloadPlane plane, LinkedBlockingQueue<Envelope> inbox, CompletableFuture<Integer> up) {
        static Receiver open() throws Exception {
            LinkedBlockingQueue<Envelope> inbox = new LinkedBlockingQueue<>();
            SocketPayloadPlane plane = SocketPayloadPlane.open(GROUP, 1, 4, 1 << 20, 1000, wire, new PeerStatus(GROUP, 1, 2, inbox),
                    inbox, "127.0.0.1", "127.0.0.1");
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
            return new Receiver(plane, inbox, up);
        }

        /** Connects as rank 0 with a handshake declaring {@code groupBytes} for the group's name; the answer byte. */
        byte handshake(SocketChannel ch, int groupBytes) throws Exception {
            byte[] g = GROUP.getBytes(StandardCharsets.UTF_8);
            ByteBuffer hs = ByteBuffer.allocate(4 + 1 + 4 + g.length + 16);
            hs.putInt(0x474C5043).put((byte) 1).putInt(groupBytes).put(g).putInt(0).putInt(1).putLong(plane.nonce()).flip();
            while (hs.hasRemaining()) {
                ch.write(hs);
            }
            ByteBuffer answer = ByteBuffer.allocate(1);
            ch.read(answer);
            return answer.get(0);
        }

        /** The reason of the one loss the plane reports. */
        String lossReason() throws Exception {
            Envelope lost = inbox.poll(20, TimeUnit.SECONDS);
            assertTrue(lost != null, "a loss reported");
            return assertInstanceOf(CollectiveMessage.Left.class, lost.message()).reason();
        }
    }

    private static SocketChannel connect(Receiver receiver) throws Exception {
        return SocketChannel.open(new InetSocketAddress("127.0.0.1", receiver.plane().port()));
    }

    @Test
    void aHandshakeDeclaringAHugeGroupNameIsRefused() throws Exception {
        Receiver one = Receiver.open();
        try (SocketChannel ch = connect(one)) {
            assertEquals(0, one.handshake(ch, Integer.MAX_VALUE), "the answer to a 2^31-1 byte group name");
        }
        assertFalse(one.up().isDone(), "no link");
        // The plane still accepts the real rank 0.
        try (SocketChannel ch = connect(one)) {
            assertEquals(1, one.handshake(ch, GROUP.length()));
            assertEquals(0, one.up().get(10, TimeUnit.SECONDS));
        } finally {
            one.plane().abort();
        }
    }

    @Test
    void aFrameLongerThanTheCapIsALossNamingItsLength() throws Exception {
        Receiver one = Receiver.open();
        try (SocketChannel ch = connect(one)) {
            assertEquals(1, one.handshake(ch, GROUP.length()));
            ch.write(ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt(0, Integer.MAX_VALUE));
            String reason = one.lossReason();
            assertTrue(reason.contains("a payload frame of 2147483647 bytes; expected 1.."), reason);
        } finally {
            one.plane().abort();
        }
    }

    @Test
    void aFrameDeclaringMoreFloatsThanItHoldsIsALossNamingTheField() throws Exception {
        Receiver one = Receiver.open();
        try (SocketChannel ch = connect(one)) {
            assertEquals(1, one.handshake(ch, GROUP.length()));
            // Deliver (id 211) from rank 0: a chunk (tag 1), sequence 0, offset 0, then 2^31-1 floats it does not hold.
            byte[] kryo = {(byte) 0xD5, 0x01, 0, 1, 0, 0, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, 0x07, 0, 0, 0, 0};
            ByteBuffer frame = ByteBuffer.allocate(4 + kryo.length).order(ByteOrder.LITTLE_ENDIAN);
            frame.putInt(kryo.length).put(kryo).flip();
            ch.write(frame);
            String reason = one.lossReason();
            assertTrue(reason.contains("Deliver.chunk.floats: declares 2147483647 elements of 4 bytes but the frame has 4 left"), reason);
        } finally {
            one.plane().abort();
        }
    }
}
