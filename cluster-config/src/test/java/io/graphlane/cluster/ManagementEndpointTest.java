package io.graphlane.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.typesafe.config.ConfigFactory;
import io.graphlane.backend.cpu.CpuBackend;
import io.graphlane.server.ConnectionLimits;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The management port of a real node under its connection limits: a flood of silent connections from one address over
 * the per-client cap leaves {@code /alive} answering 200, the connections over the cap are closed at once, and the
 * limits are read from {@code graphlane.cluster.management} with bad values refused by key.
 */
class ManagementEndpointTest {

    /** A connection to the management port from {@code localAddress} (127.0.0.2: another client on Linux's loopback). */
    private static Socket connectFrom(String localAddress, int port) throws IOException {
        Socket socket = new Socket();
        try {
            socket.bind(new InetSocketAddress(localAddress, 0));
        } catch (IOException e) {
            socket.close();
            assumeTrue(false, "cannot bind " + localAddress + " (a second loopback address, as on Linux): " + e.getMessage());
        }
        socket.connect(new InetSocketAddress("127.0.0.1", port), 5_000);
        socket.setSoTimeout(30_000);
        return socket;
    }

    /** Sends GET {@code path} on {@code socket} and reads until the server closes it: the status line, or null if unanswered. */
    private static String get(Socket socket, String path) throws IOException {
        try {
            socket.getOutputStream().write(("GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
                    .getBytes(StandardCharsets.US_ASCII));
            socket.getOutputStream().flush();
            InputStream in = socket.getInputStream();
            String answer = new String(in.readAllBytes(), StandardCharsets.US_ASCII);
            return answer.isEmpty() ? null : answer.lines().findFirst().orElse(null);
        } catch (SocketException closedOrReset) {
            return null;
        }
    }

    @Test
    void aFloodOfSilentConnectionsOverTheCapLeavesAliveAnswering() throws Exception {
        NodeSettings settings = TestNodes.localCluster(1).get(0);
        // Silent connections stay for the 30 s header-read timeout: far longer than this test. Pekko HTTP's own
        // max-connections is set below the flood: a port bound by Pekko alone would stop accepting, /alive included.
        GraphlaneNode node = GraphlaneNode.start(settings, ConfigFactory.parseString("""
                pekko.http.server.max-connections = 16
                graphlane.cluster.management {
                  header-read-timeout = 30s
                  max-connections-per-client = 8
                  max-connections = 64
                }
                """).withFallback(TestNodes.base()), 1, LaneStageHosting.owning(new CpuBackend()));
        int port = settings.managementPort();
        List<Socket> flood = new ArrayList<>();
        try {
            node.hosted().toCompletableFuture().get(30, TimeUnit.SECONDS);
            for (int i = 0; i < 20; i++) {
                flood.add(connectFrom("127.0.0.2", port));
            }
            assertEquals(200, TestNodes.get(port, "/alive").statusCode(), "/alive answers while the flood holds its connections");
            assertEquals(200, TestNodes.get(port, "/cluster/members").statusCode());
            int answered = 0;
            for (Socket socket : flood) {
                String status = get(socket, "/alive");
                if (status != null) {
                    assertEquals("HTTP/1.1 200 OK", status);
                    answered++;
                }
            }
            assertEquals(8, answered, "the flood's connections within the per-client cap are served, the other 12 were closed");
        } finally {
            for (Socket s : flood) {
                s.close();
            }
            node.shutdown().toCompletableFuture().get(30, TimeUnit.SECONDS);
        }
    }

    @Test
    void theLimitsComeFromTheNodeConfigurationAndBadOnesAreRefusedByKey() {
        ConnectionLimits defaults = ManagementEndpoint.limits(ConfigFactory.load());
        assertEquals(new ConnectionLimits(Duration.ofSeconds(10), Duration.ofSeconds(60), 32, 256), defaults);
        ClusterConfigException zero = assertThrows(ClusterConfigException.class, () -> ManagementEndpoint.limits(
                ConfigFactory.parseString("graphlane.cluster.management.header-read-timeout = 0s").withFallback(ConfigFactory.load())));
        assertTrue(zero.getMessage().contains("graphlane.cluster.management.header-read-timeout must be positive"), zero.getMessage());
        ClusterConfigException word = assertThrows(ClusterConfigException.class, () -> ManagementEndpoint.limits(
                ConfigFactory.parseString("graphlane.cluster.management.max-connections = many").withFallback(ConfigFactory.load())));
        assertTrue(word.getMessage().contains("graphlane.cluster.management.max-connections must be a whole number"), word.getMessage());
        ClusterConfigException perClient = assertThrows(ClusterConfigException.class, () -> ManagementEndpoint.limits(
                ConfigFactory.parseString("graphlane.cluster.management.max-connections-per-client = 300").withFallback(ConfigFactory.load())));
        assertTrue(perClient.getMessage().contains("max-connections-per-client must be at most graphlane.cluster.management.max-connections"
                + " (256), got 300"), perClient.getMessage());
    }
}
