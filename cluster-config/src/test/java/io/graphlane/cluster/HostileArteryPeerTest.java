package io.graphlane.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.graphlane.backend.cpu.CpuBackend;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.AbstractActor;
import org.apache.pekko.actor.ActorSelection;
import org.apache.pekko.actor.ExtendedActorSystem;
import org.apache.pekko.actor.Props;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.pattern.Patterns;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

/**
 * A hostile peer against a node's Artery port, as an attacker without the cluster's keys would try it: frame lengths
 * of 0, -1, -5 and 2^31-1 on each of Artery's three streams, a truncated connection header, garbage and silence. With
 * plain TCP (behind the frame guard) and with TLS, both nodes stay Up and reachable, a message still crosses between
 * them, and the attack costs at most one log line per connection.
 */
class HostileArteryPeerTest {

    @Test
    void plainTcpBehindTheGuardHoldsUp() throws Exception {
        Config base = ConfigFactory.parseString("graphlane.cluster.artery-guard.header-timeout = 500ms").withFallback(TestNodes.base());
        survivesTheAttacks(base, false, true);
    }

    @Test
    void tlsHoldsUp(@TempDir Path dir) throws Exception {
        Path keyStore = TestKeyStores.selfSigned(dir.resolve("node.p12"), "graphlane-test");
        Config tls = TestKeyStores.configSslEngine(keyStore, keyStore)
                .atPath("graphlane.cluster.profiles.tls.pekko.remote.artery.ssl.config-ssl-engine");
        survivesTheAttacks(tls.withFallback(TestNodes.base()), true, false);
    }

    private void survivesTheAttacks(Config base, boolean tls, boolean silenceIsCut) throws Exception {
        List<GraphlaneNode> nodes = new ArrayList<>();
        Logger root = (Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
        ListAppender<ILoggingEvent> log = new ListAppender<>();
        try {
            for (NodeSettings s : TestNodes.localCluster(2)) {
                nodes.add(GraphlaneNode.start(s.withTls(tls), base, 2, new LaneStageHosting<>(new CpuBackend())));
            }
            for (GraphlaneNode n : nodes) {
                n.hosted().toCompletableFuture().get(60, TimeUnit.SECONDS);
            }
            GraphlaneNode target = nodes.get(0);
            for (GraphlaneNode n : nodes) {
                ((ExtendedActorSystem) Adapter.toClassic(n.system())).systemActorOf(Props.create(Echo.class), "echo");
            }
            assertEquals("pong", echo(nodes.get(1), target), "a message crosses before the attack");

            log.start();
            root.addAppender(log);
            int port = target.system().address().getPort().get();
            List<Socket> attacks = attack(port);
            for (Socket s : attacks.subList(0, attacks.size() - 1)) {
                assertClosedByTheNode(s, tls);
            }
            Socket silent = attacks.get(attacks.size() - 1);
            if (silenceIsCut) {
                assertClosedByTheNode(silent, false);
            }

            assertEquals("pong", echo(nodes.get(1), target), "a message crosses after the attack");
            assertEquals("pong", echo(target, nodes.get(1)), "and the other way");
            for (GraphlaneNode n : nodes) {
                var state = Cluster.get(n.system()).state();
                assertTrue(state.getUnreachable().isEmpty(), "nothing unreachable from " + n.system().address() + ": " + state);
                assertEquals(2, countUp(n), "both members Up as seen from " + n.system().address());
                assertEquals(200, TestNodes.get(n.settings().managementPort(), "/alive").statusCode());
            }
            silent.close();
            long lines = log.list.stream().filter(e -> e.getLevel().isGreaterOrEqual(Level.WARN)).count();
            assertTrue(lines <= attacks.size(), lines + " warning lines for " + attacks.size() + " hostile connections: "
                    + log.list.stream().map(ILoggingEvent::getFormattedMessage).limit(5).toList());
        } finally {
            root.detachAppender(log);
            List<CompletableFuture<?>> leaving = new ArrayList<>();
            for (GraphlaneNode n : nodes) {
                leaving.add(n.shutdown().toCompletableFuture());
            }
            CompletableFuture.allOf(leaving.toArray(CompletableFuture[]::new)).get(90, TimeUnit.SECONDS);
        }
    }

    /** Every hostile connection, the silent one last (left open). */
    private static List<Socket> attack(int port) throws IOException {
        List<Socket> sockets = new ArrayList<>();
        for (int stream = 1; stream <= 3; stream++) {
            for (int length : new int[] {0, -1, -5, Integer.MAX_VALUE}) {
                Socket s = open(port);
                ByteBuffer b = ByteBuffer.allocate(9).order(ByteOrder.LITTLE_ENDIAN);
                b.put(new byte[] {'A', 'K', 'K', 'A', (byte) stream}).putInt(length);
                s.getOutputStream().write(b.array());
                sockets.add(s);
            }
        }
        Socket truncated = open(port);
        truncated.getOutputStream().write(new byte[] {'A', 'K', 'K'});
        truncated.shutdownOutput();
        sockets.add(truncated);
        Socket garbage = open(port);
        byte[] noise = new byte[1024];
        new Random(1).nextBytes(noise);
        try {
            garbage.getOutputStream().write(noise);
        } catch (IOException cutWhileWriting) {
            // the node may close it before all of it is written
        }
        sockets.add(garbage);
        sockets.add(open(port));
        return sockets;
    }

    private static Socket open(int port) throws IOException {
        Socket s = new Socket(InetAddress.getLoopbackAddress(), port);
        s.setSoTimeout(30_000);
        return s;
    }

    /** The node ends the connection: end of stream or a reset, never a read that waits past the socket timeout. */
    private static void assertClosedByTheNode(Socket s, boolean tls) throws IOException {
        try (s; InputStream in = s.getInputStream()) {
            // With TLS the node may answer a failed handshake with an alert before it closes.
            byte[] sink = new byte[4096];
            while (in.read(sink) >= 0) {
                assertTrue(tls, "the node sent bytes to a hostile plain-TCP peer");
            }
        } catch (SocketTimeoutException e) {
            throw new AssertionError("the node did not end a hostile connection within 30 s", e);
        } catch (IOException reset) {
            // closed with a reset: ended all the same
        }
    }

    private static long countUp(GraphlaneNode n) {
        long up = 0;
        for (var m : Cluster.get(n.system()).state().getMembers()) {
            if (m.status() == org.apache.pekko.cluster.MemberStatus.up()) {
                up++;
            }
        }
        return up;
    }

    /** Asks the echo actor of {@code to} from {@code from}: one message each way over Artery. */
    private static String echo(GraphlaneNode from, GraphlaneNode to) throws Exception {
        ActorSelection echo = Adapter.toClassic(from.system()).actorSelection(to.system().address() + "/system/echo");
        return (String) Patterns.ask(echo, "ping", Duration.ofSeconds(20)).toCompletableFuture().get(30, TimeUnit.SECONDS);
    }

    /** Answers "pong" to anything: a message that must cross Artery both ways. */
    static final class Echo extends AbstractActor {
        @Override
        public Receive createReceive() {
            return receiveBuilder().matchAny(m -> getSender().tell("pong", getSelf())).build();
        }
    }
}
