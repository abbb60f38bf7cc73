package io.graphlane.cluster.guard;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.graphlane.cluster.ClusterConfigException;
import io.graphlane.cluster.ClusterProfile;
import io.graphlane.cluster.NodeConfig;
import io.graphlane.cluster.NodeSettings;
import io.graphlane.cluster.TestPorts;
import java.util.List;
import java.util.OptionalInt;
import org.junit.jupiter.api.Test;

class ArteryEndpointTest {

    private static Config node(String host, boolean tls, String extra) {
        NodeSettings settings = new NodeSettings(ClusterProfile.STATIC, 1, OptionalInt.of(0), host, 0, 0, List.of(),
                List.of("127.0.0.1:2551"), tls);
        return NodeConfig.build(settings, ConfigFactory.parseString(extra).withFallback(ConfigFactory.load()));
    }

    @Test
    void plainTextOffLoopbackIsRefusedNamingBothFlags() {
        for (String host : new String[] {"10.1.2.3", "0.0.0.0"}) {
            ClusterConfigException e = assertThrows(ClusterConfigException.class, () -> ArteryEndpoint.open(node(host, false, "")));
            assertTrue(e.getMessage().startsWith("Artery would listen on " + host + " in plain text (transport tcp)"), e.getMessage());
            assertTrue(e.getMessage().contains("--tls") && e.getMessage().contains("--allow-plaintext"), e.getMessage());
        }
    }

    @Test
    void aNonLoopbackAdvertisedAddressIsRefusedToo() {
        Config config = node("127.0.0.1", false, "").withFallback(ConfigFactory.empty());
        Config advertised = ConfigFactory.parseString("pekko.remote.artery.bind.hostname = \"127.0.0.1\"\n"
                + "pekko.remote.artery.canonical.hostname = \"10.9.8.7\"").withFallback(config);
        ClusterConfigException e = assertThrows(ClusterConfigException.class, () -> ArteryEndpoint.open(advertised));
        assertTrue(e.getMessage().startsWith("Artery would be advertised as 10.9.8.7 in plain text"), e.getMessage());
    }

    @Test
    void allowPlaintextStartsTheGuardWhereArteryWouldHaveListened() {
        try (ArteryEndpoint endpoint = ArteryEndpoint.open(node("0.0.0.0", false, "graphlane.cluster.allow-plaintext = on"))) {
            ArteryFrameGuard guard = endpoint.guard().orElseThrow();
            Config c = endpoint.config();
            assertTrue(guard.address().getAddress().isAnyLocalAddress());
            assertTrue(guard.address().getPort() > 0);
            assertEquals(guard.address().getPort(), c.getInt("pekko.remote.artery.canonical.port"), "port 0 became the guard's port");
            assertEquals("127.0.0.1", c.getString("pekko.remote.artery.bind.hostname"), "Artery itself binds loopback");
            assertEquals(guard.artery().getPort(), c.getInt("pekko.remote.artery.bind.port"));
            assertEquals("0.0.0.0", c.getString(ArteryEndpoint.PUBLIC_BIND_HOSTNAME), "payload sockets bind the public host");
        }
    }

    @Test
    void loopbackPlainTcpRunsBehindTheGuard_andAFixedPortIsKept() throws Exception {
        int port = TestPorts.reserve(1).get(0);
        Config config = ConfigFactory.parseString("pekko.remote.artery.canonical.port = " + port).withFallback(node("127.0.0.1", false, ""));
        try (ArteryEndpoint endpoint = ArteryEndpoint.open(config)) {
            assertEquals(port, endpoint.guard().orElseThrow().address().getPort());
            assertEquals(port, endpoint.config().getInt("pekko.remote.artery.canonical.port"));
            assertTrue(endpoint.config().getInt("pekko.remote.artery.bind.port") != port);
        }
    }

    @Test
    void tlsNeedsNoFlagAndNoGuard() {
        try (ArteryEndpoint endpoint = ArteryEndpoint.open(node("10.1.2.3", true, ""))) {
            assertTrue(endpoint.guard().isEmpty());
            assertEquals("tls-tcp", endpoint.config().getString("pekko.remote.artery.transport"));
            assertEquals("", endpoint.config().getString("pekko.remote.artery.bind.hostname"));
        }
    }

    @Test
    void theGuardCanBeTurnedOff() {
        try (ArteryEndpoint endpoint = ArteryEndpoint.open(node("127.0.0.1", false, "graphlane.cluster.artery-guard.enabled = off"))) {
            assertTrue(endpoint.guard().isEmpty());
            assertEquals(0, endpoint.config().getInt("pekko.remote.artery.canonical.port"));
        }
    }

    @Test
    void badLimitsAreRefusedNamingTheKey() {
        ClusterConfigException e = assertThrows(ClusterConfigException.class,
                () -> ArteryEndpoint.open(node("127.0.0.1", false, "graphlane.cluster.artery-guard.max-connections = 0")));
        assertEquals("graphlane.cluster.artery-guard.max-connections must be >= 1, got 0", e.getMessage());
    }
}
