package io.graphlane.cluster.guard;

import static io.graphlane.cluster.guard.ArteryFramingTest.concat;
import static io.graphlane.cluster.guard.ArteryFramingTest.connectionHeader;
import static io.graphlane.cluster.guard.ArteryFramingTest.frame;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/** The guard between a stand-in for Artery (a socket that records what reaches it) and clients on loopback. */
class ArteryFrameGuardTest {
    static final int MAX = 64 * 1024;
    static final int MAX_LARGE = 1024 * 1024;

    private final List<AutoCloseable> closing = new ArrayList<>();
    private FakeArtery artery;
    private ListAppender<ILoggingEvent> log;
    private Logger guardLogger;

    @BeforeEach
    void setUp() throws IOException {
        artery = new FakeArtery();
        closing.add(artery);
        guardLogger = (Logger) LoggerFactory.getLogger(ArteryFrameGuard.class);
        log = new ListAppender<>();
        log.start();
        guardLogger.addAppender(log);
    }

    @AfterEach
    void tearDown() throws Exception {
        guardLogger.detachAppender(log);
        for (int i = closing.size() - 1; i >= 0; i--) {
            closing.get(i).close();
        }
    }

    private ArteryFrameGuard guard(Duration headerTimeout, int maxConnections, int perAddress) throws IOException {
        ArteryFrameGuard guard = ArteryFrameGuard.start(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), artery.address(),
                MAX, MAX_LARGE, new ArteryFrameGuard.Limits(headerTimeout, maxConnections, perAddress));
        closing.add(guard);
        return guard;
    }

    private Socket connect(ArteryFrameGuard guard) throws IOException {
        Socket s = new Socket(InetAddress.getLoopbackAddress(), guard.address().getPort());
        s.setSoTimeout(20_000);
        closing.add(s);
        return s;
    }

    @Test
    void wellFramedBytesReachArteryUnchanged_andTheirEndToo() throws Exception {
        ArteryFrameGuard guard = guard(Duration.ofSeconds(10), 16, 16);
        Random random = new Random(5);
        byte[] stream = concat(connectionHeader(3), frame(28, (byte) 0, random), frame(MAX_LARGE, (byte) 0, random),
                frame(300, (byte) 0, random));
        Socket client = connect(guard);
        OutputStream out = client.getOutputStream();
        for (int at = 0; at < stream.length; ) {
            int n = Math.min(1 + random.nextInt(70_000), stream.length - at);
            out.write(stream, at, n);
            out.flush();
            at += n;
        }
        client.shutdownOutput();
        assertArrayEquals(stream, artery.nextConnection().get(20, TimeUnit.SECONDS));
        assertEquals(-1, client.getInputStream().read(), "Artery's end reaches the client");
        assertEquals(1, guard.forwarded());
        assertEquals(0, guard.refused());
        assertTrue(warnings().isEmpty(), warnings().toString());
    }

    @Test
    void aBadFrameCutsTheConnectionOnAFrameBoundary() throws Exception {
        ArteryFrameGuard guard = guard(Duration.ofSeconds(10), 16, 16);
        Random random = new Random(9);
        byte[] good = concat(connectionHeader(1), frame(100, (byte) 0, random));
        for (int length : new int[] {0, -1, -5, Integer.MAX_VALUE}) {
            Socket client = connect(guard);
            byte[] bad = ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt(length).array();
            client.getOutputStream().write(concat(good, bad, new byte[40]));
            assertEquals(-1, client.getInputStream().read(), "the client is cut, length " + length);
            assertArrayEquals(good, artery.nextConnection().get(20, TimeUnit.SECONDS),
                    "Artery got the whole frame before the bad one and then the connection's end, length " + length);
        }
        assertEquals(4, guard.refused());
        assertEquals(1, warnings().size(), "four refusals within 10 s: one warning " + warnings());
        assertTrue(warnings().get(0).contains("frame 2 declares 0 bytes; a frame on this stream holds 28 to " + MAX), warnings().toString());
    }

    @Test
    void garbageAndSilenceNeverReachArtery() throws Exception {
        ArteryFrameGuard guard = guard(Duration.ofMillis(300), 16, 16);
        Socket garbage = connect(guard);
        garbage.getOutputStream().write("GET / HTTP/1.1\r\nHost: x\r\n\r\n".getBytes());
        Socket silent = connect(guard);
        Socket halfHeader = connect(guard);
        halfHeader.getOutputStream().write(new byte[] {'A', 'K', 'K'});
        assertEquals(-1, garbage.getInputStream().read());
        assertEquals(-1, silent.getInputStream().read(), "closed at the header deadline");
        assertEquals(-1, halfHeader.getInputStream().read(), "closed at the header deadline");
        assertEquals(3, guard.refused());
        assertEquals(0, guard.forwarded());
        assertEquals(0, artery.accepted(), "no connection reached Artery");
        awaitConnections(guard, 0);
    }

    @Test
    void connectionsOverTheCapsAreClosedAtOnce() throws Exception {
        ArteryFrameGuard guard = guard(Duration.ofSeconds(30), 16, 3);
        List<Socket> held = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            Socket s = connect(guard);
            s.getOutputStream().write(connectionHeader(2));
            held.add(s);
        }
        for (int i = 0; i < 3; i++) {
            artery.nextConnectionOpened().get(20, TimeUnit.SECONDS);
        }
        Socket fourth = connect(guard);
        assertEquals(-1, fourth.getInputStream().read(), "a fourth connection from one address is closed");
        assertEquals(1, guard.refused());
        held.get(0).close();
        awaitConnections(guard, 2); // its end reached Artery, which closed its side: the slot is free
        Socket again = connect(guard);
        again.getOutputStream().write(connectionHeader(2));
        artery.nextConnectionOpened().get(20, TimeUnit.SECONDS);
        assertEquals(4, guard.forwarded());
        assertTrue(warnings().get(0).contains("already has 3 connections open (graphlane.cluster.artery-guard.max-connections-per-address)"),
                warnings().toString());
    }

    @Test
    void theTotalCapHoldsAcrossAddresses() throws Exception {
        ArteryFrameGuard guard = guard(Duration.ofSeconds(30), 2, 16);
        for (int i = 0; i < 2; i++) {
            connect(guard).getOutputStream().write(connectionHeader(1));
            artery.nextConnectionOpened().get(20, TimeUnit.SECONDS);
        }
        Socket third = connect(guard);
        assertEquals(-1, third.getInputStream().read());
        assertTrue(warnings().get(0).contains("the node already has 2 connections open"), warnings().toString());
    }

    @Test
    void closingTheGuardEndsEveryConnection() throws Exception {
        ArteryFrameGuard guard = guard(Duration.ofSeconds(30), 16, 16);
        Socket forwarded = connect(guard);
        forwarded.getOutputStream().write(connectionHeader(1));
        artery.nextConnectionOpened().get(20, TimeUnit.SECONDS);
        Socket waiting = connect(guard);
        awaitConnections(guard, 2);
        guard.close();
        assertEquals(-1, forwarded.getInputStream().read());
        assertEquals(-1, waiting.getInputStream().read());
        awaitConnections(guard, 0);
    }

    private List<String> warnings() {
        return log.list.stream().filter(e -> e.getLevel() == Level.WARN).map(ILoggingEvent::getFormattedMessage).toList();
    }

    private static void awaitConnections(ArteryFrameGuard guard, int n) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (guard.connections() != n) {
            assertTrue(System.nanoTime() < deadline, "the guard holds " + guard.connections() + " connections, expected " + n);
            Thread.sleep(10); // polls a count the guard's threads change; orders nothing
        }
    }

    /** Accepts connections on loopback and records each one's bytes until its end. */
    static final class FakeArtery implements AutoCloseable {
        private final ServerSocket server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        private final LinkedBlockingQueue<CompletableFuture<byte[]>> ended = new LinkedBlockingQueue<>();
        private final LinkedBlockingQueue<Socket> opened = new LinkedBlockingQueue<>();
        private final List<Socket> sockets = new ArrayList<>();
        private volatile int accepted;

        FakeArtery() throws IOException {
            Thread t = new Thread(() -> {
                while (!server.isClosed()) {
                    try {
                        Socket s = server.accept();
                        synchronized (sockets) {
                            sockets.add(s);
                        }
                        accepted++;
                        CompletableFuture<byte[]> bytes = new CompletableFuture<>();
                        ended.add(bytes);
                        opened.add(s);
                        Thread reader = new Thread(() -> bytes.complete(readAll(s)), "fake-artery-reader");
                        reader.setDaemon(true);
                        reader.start();
                    } catch (IOException e) {
                        return;
                    }
                }
            }, "fake-artery");
            t.setDaemon(true);
            t.start();
        }

        InetSocketAddress address() {
            return (InetSocketAddress) server.getLocalSocketAddress();
        }

        int accepted() {
            return accepted;
        }

        /** The bytes of the next connection, once it has ended. */
        CompletableFuture<byte[]> nextConnection() throws InterruptedException {
            return ended.poll(20, TimeUnit.SECONDS);
        }

        /** The next connection, once accepted. */
        CompletableFuture<Socket> nextConnectionOpened() throws InterruptedException {
            Socket s = opened.poll(20, TimeUnit.SECONDS);
            return s == null ? CompletableFuture.failedFuture(new AssertionError("no connection reached Artery"))
                    : CompletableFuture.completedFuture(s);
        }

        private static byte[] readAll(Socket s) {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            // As Artery does, the connection is closed once its bytes have ended.
            try (s; InputStream in = s.getInputStream()) {
                in.transferTo(out);
            } catch (IOException e) {
                // the connection broke: what arrived is what counts
            }
            return out.toByteArray();
        }

        @Override
        public void close() throws IOException {
            server.close();
            synchronized (sockets) {
                for (Socket s : sockets) {
                    s.close();
                }
            }
        }
    }
}
