package io.graphlane.cluster.collective;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.AppenderBase;
import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.graphlane.backend.cpu.collective.CollectiveMessage;
import io.graphlane.backend.cpu.collective.CollectiveTransport.Envelope;
import io.graphlane.cluster.TestKeyStores;
import io.graphlane.cluster.collective.SocketPayloadPlaneTest.Rank;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.FloatBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.ExtendedActorSystem;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.event.LogSource$;
import org.apache.pekko.event.Logging;
import org.apache.pekko.remote.artery.tcp.ConfigSSLEngineProvider;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

/**
 * Two ranks' socket planes under TLS, without the rank actors: a pair holding the cluster's certificate links and
 * carries frames both ways and closes in order; a peer with a certificate of its own (trusting nothing of the cluster's,
 * or trusting the cluster but not trusted by it: the accepting side requires the client's certificate) and a peer
 * speaking plain TCP are refused, with a warning, and never linked.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class PayloadTlsTest {
    @TempDir
    static Path dir;
    private static ActorSystem<Void> system;
    private static CollectiveWireSerializer wire;
    private static PayloadTls cluster;
    private static PayloadTls stranger;
    private static PayloadTls strangerTrustingTheCluster;

    @BeforeAll
    @Timeout(value = 180, unit = TimeUnit.SECONDS) // three keytool runs, each a JVM: slow on a loaded machine
    static void start() throws Exception {
        system = ActorSystem.create(Behaviors.empty(), "tls-plane-test", ConfigFactory.parseString("pekko.loglevel = WARNING")
                .withFallback(ConfigFactory.load()));
        wire = new CollectiveWireSerializer((ExtendedActorSystem) Adapter.toClassic(system));
        Path clusterStore = TestKeyStores.selfSigned(dir.resolve("cluster.p12"), "graphlane-cluster");
        Path strangerStore = TestKeyStores.selfSigned(dir.resolve("stranger.p12"), "graphlane-stranger");
        Path strangerTrusting = TestKeyStores.selfSigned(dir.resolve("stranger-trusting.p12"), "graphlane-stranger");
        TestKeyStores.trust(strangerTrusting, clusterStore, "cluster");
        cluster = tls(clusterStore, clusterStore);
        stranger = tls(strangerStore, strangerStore);
        strangerTrustingTheCluster = tls(strangerTrusting, strangerTrusting);
    }

    @AfterAll
    static void stop() throws Exception {
        system.terminate();
        system.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
    }

    /** The payload TLS of Artery's default provider over {@code keyStore} and {@code trustStore}. */
    private static PayloadTls tls(Path keyStore, Path trustStore) {
        Config engine = TestKeyStores.configSslEngine(keyStore, trustStore)
                .withFallback(ConfigFactory.load().getConfig("pekko.remote.artery.ssl.config-ssl-engine"));
        return new PayloadTls(new ConfigSSLEngineProvider(engine, Logging.withMarker(Adapter.toClassic(system), PayloadTlsTest.class.getName(), LogSource$.MODULE$.fromString())));
    }

    private static Rank rank(String group, int rank, PayloadTls tls) throws Exception {
        return SocketPayloadPlaneTest.rank(wire, group, rank, 20_000, tls, null);
    }

    private static float[] ramp(int n, float step) {
        float[] v = new float[n];
        for (int i = 0; i < n; i++) {
            v[i] = i * step;
        }
        return v;
    }

    private static float[] floats(CollectiveMessage message) {
        CollectiveMessage.Chunk chunk = assertInstanceOf(CollectiveMessage.Chunk.class, message);
        float[] got = new float[chunk.values().remaining()];
        chunk.values().get(0, got);
        return got;
    }

    /** Chunks larger than a TLS record travel both ways, in order, and an orderly close reports no loss. */
    @Test
    void aPairWithTheClustersCertificateLinksCarriesFramesAndClosesInOrder() throws Exception {
        pairCarriesFramesAndClosesInOrder("tls-pair", null);
    }

    /**
     * The same pair offering shared memory: the offer travels inside the TLS session, the payload through the segment,
     * and only doorbells on the TLS socket; frames arrive the same and the close is as orderly.
     */
    @Test
    void aPairOnOneHostUnderTlsMovesItsPayloadThroughSharedMemory() throws Exception {
        pairCarriesFramesAndClosesInOrder("tls-shared", dir);
    }

    private static void pairCarriesFramesAndClosesInOrder(String group, Path sharedMemory) throws Exception {
        Rank one = SocketPayloadPlaneTest.rank(wire, group, 1, 20_000, cluster, sharedMemory);
        Rank zero = SocketPayloadPlaneTest.rank(wire, group, 0, 20_000, cluster, sharedMemory);
        zero.plane().connect(1, one.plane().host(), one.plane().port(), one.plane().nonce());
        assertEquals(1, zero.up().get(20, TimeUnit.SECONDS));
        assertEquals(0, one.up().get(20, TimeUnit.SECONDS));
        assertEquals(sharedMemory != null, zero.plane().sharesMemoryWith(1), "rank 0's link through shared memory");
        assertEquals(sharedMemory != null, one.plane().sharesMemoryWith(0), "rank 1's link through shared memory");
        float[] big = ramp(20_000, 0.25f);
        float[] small = ramp(3, 1f);
        for (int i = 0; i < 3; i++) {
            zero.plane().send(1, new CollectiveMessage.Chunk(i, 0, FloatBuffer.wrap(big), null));
        }
        one.plane().send(0, new CollectiveMessage.Chunk(7, 0, FloatBuffer.wrap(small), null));
        for (int i = 0; i < 3; i++) {
            Envelope e = one.inbox().poll(20, TimeUnit.SECONDS);
            assertEquals(i, ((CollectiveMessage.Chunk) e.message()).sequence());
            assertArrayEquals(big, floats(e.message()));
            one.plane().consumed(0, (CollectiveMessage.Chunk) e.message());
        }
        CollectiveMessage.Chunk back = (CollectiveMessage.Chunk) zero.inbox().poll(20, TimeUnit.SECONDS).message();
        assertArrayEquals(small, floats(back));
        zero.plane().consumed(1, back);
        CompletableFuture<Void> zeroClosed = zero.plane().closeAsync(20_000);
        CompletableFuture<Void> oneClosed = one.plane().closeAsync(20_000);
        CompletableFuture.allOf(zeroClosed, oneClosed).get(30, TimeUnit.SECONDS);
        assertNull(one.inbox().poll(200, TimeUnit.MILLISECONDS), "no loss reported");
        assertNull(zero.inbox().poll(0, TimeUnit.MILLISECONDS), "no loss reported");
    }

    /**
     * A rank 0 holding another certificate, one trusting the cluster's certificate but not trusted by it, and one
     * without TLS all present the right group, ranks and nonce; each is refused with a warning, and rank 1 links only
     * with the rank 0 that holds the cluster's certificate.
     */
    @Test
    void aPeerWithoutTheClustersCertificateIsRefusedWithAWarning() throws Exception {
        Logger logger = (Logger) LoggerFactory.getLogger(SocketPayloadPlane.class);
        String refusal = "collective group tls-refuse rank 1: refused a payload connection from /127.0.0.1:";
        List<ILoggingEvent> refusals = new CopyOnWriteArrayList<>();
        CountDownLatch threeRefusals = new CountDownLatch(3);
        AppenderBase<ILoggingEvent> logged = new AppenderBase<>() {
            @Override
            protected void append(ILoggingEvent e) {
                if (e.getFormattedMessage().startsWith(refusal)) {
                    refusals.add(e);
                    threeRefusals.countDown();
                }
            }
        };
        logged.start();
        logger.addAppender(logged);
        Level level = logger.getLevel();
        logger.setLevel(Level.DEBUG);
        Rank one = rank("tls-refuse", 1, cluster);
        int plainPort;
        try {
            for (PayloadTls other : new PayloadTls[] {stranger, strangerTrustingTheCluster}) {
                Rank intruder = rank("tls-refuse", 0, other);
                intruder.plane().connect(1, one.plane().host(), one.plane().port(), one.plane().nonce());
                ExecutionException failed = assertThrows(ExecutionException.class,
                        () -> intruder.up().get(20, TimeUnit.SECONDS));
                assertTrue(failed.getCause().getMessage().contains("connecting to 127.0.0.1:" + one.plane().port() + " failed"),
                        failed.getCause().getMessage());
                intruder.plane().abort();
            }
            try (SocketChannel plain = SocketChannel.open(new InetSocketAddress("127.0.0.1", one.plane().port()))) {
                plainPort = ((InetSocketAddress) plain.getLocalAddress()).getPort();
                byte[] g = "tls-refuse".getBytes(StandardCharsets.UTF_8);
                ByteBuffer hs = ByteBuffer.allocate(4 + 1 + 4 + g.length + 16);
                hs.putInt(0x474C5043).put((byte) 2).putInt(g.length).put(g).putInt(0).putInt(1).putLong(one.plane().nonce()).flip();
                plain.write(hs);
                ByteBuffer answer = ByteBuffer.allocate(64);
                int read = plain.read(answer);
                assertFalse(read == 1 && answer.get(0) == 1, "a plain handshake is never accepted");
            }
            assertFalse(one.up().isDone(), "no link with a peer lacking the cluster's certificate");
            Rank zero = rank("tls-refuse", 0, cluster);
            zero.plane().connect(1, one.plane().host(), one.plane().port(), one.plane().nonce());
            assertEquals(0, one.up().get(20, TimeUnit.SECONDS));
            assertEquals(1, zero.up().get(20, TimeUnit.SECONDS));
            zero.plane().abort();
            // A refusal is logged once its socket is closed: the refused peers may have seen it first.
            assertTrue(threeRefusals.await(20, TimeUnit.SECONDS), "three refusals logged: " + refusals);
        } finally {
            one.plane().abort();
            logger.detachAppender(logged);
            logger.setLevel(level);
        }
        // Each refusal names the failed handshake (the TLS alert, or the end of a peer that refused this side's certificate
        // itself); the first is a warning, the others within 10 s go to debug.
        assertEquals(3, refusals.size(), refusals.toString());
        for (ILoggingEvent e : refusals) {
            assertTrue(e.getFormattedMessage().contains("its handshake failed: "), e.getFormattedMessage());
        }
        String plainRefusal = refusals.stream().map(ILoggingEvent::getFormattedMessage)
                .filter(m -> m.startsWith(refusal + plainPort + ":")).findFirst().orElseThrow();
        assertTrue(plainRefusal.contains("its handshake failed: javax.net.ssl."), plainRefusal);
        assertEquals(List.of(Level.WARN, Level.DEBUG, Level.DEBUG), refusals.stream().map(ILoggingEvent::getLevel).toList());
    }
}
