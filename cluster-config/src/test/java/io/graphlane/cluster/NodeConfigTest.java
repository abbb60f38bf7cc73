package io.graphlane.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import java.util.List;
import java.util.OptionalInt;
import org.junit.jupiter.api.Test;

/** The configuration each profile gives a node. */
class NodeConfigTest {
    private static final Config BASE = ConfigFactory.load();

    @Test
    void localProfileBindsLoopbackPortsByRankAndBootstrapsOverEveryManagementPort() {
        Config c = NodeConfig.build(NodeSettings.local(BASE, 2, 3), BASE);
        assertEquals("127.0.0.1", c.getString("pekko.remote.artery.canonical.hostname"));
        assertEquals(2553, c.getInt("pekko.remote.artery.canonical.port"));
        assertEquals(8560, c.getInt("pekko.management.http.port"));
        assertEquals("127.0.0.1", c.getString("pekko.management.http.hostname"));
        assertEquals("config", c.getString("pekko.management.cluster.bootstrap.contact-point-discovery.discovery-method"));
        assertEquals(3, c.getInt("pekko.management.cluster.bootstrap.contact-point-discovery.required-contact-point-nr"));
        assertFalse(c.getBoolean("pekko.management.cluster.bootstrap.contact-point.filter-on-fallback-port"));
        List<? extends Config> endpoints = c.getConfigList("pekko.discovery.config.services.graphlane.endpoints");
        assertEquals(List.of(8558, 8559, 8560), endpoints.stream().map(e -> e.getInt("port")).toList());
        assertEquals(List.of("graphlane-rank-2"), c.getStringList("pekko.cluster.roles"));
        assertEquals("cluster", c.getString("pekko.actor.provider"));
        assertEquals("keep-majority", c.getString("pekko.cluster.split-brain-resolver.active-strategy"));
        assertEquals("org.apache.pekko.cluster.sbr.SplitBrainResolverProvider", c.getString("pekko.cluster.downing-provider-class"));
        assertEquals("io.graphlane.cluster.NodeReadinessCheck",
                c.getString("pekko.management.health-checks.readiness-checks.graphlane-node"));
        assertEquals("tcp", c.getString("pekko.remote.artery.transport"));
    }

    @Test
    void staticProfileListsSeedNodesWithTheSystemName() {
        NodeSettings s = new NodeSettings(ClusterProfile.STATIC, 2, OptionalInt.empty(), "10.0.0.5", 2551, 8558, List.of(),
                List.of("10.0.0.4:2551", "10.0.0.5:2551"), false);
        Config c = NodeConfig.build(s, BASE);
        assertEquals(List.of("pekko://graphlane@10.0.0.4:2551", "pekko://graphlane@10.0.0.5:2551"),
                c.getStringList("pekko.cluster.seed-nodes"));
        assertFalse(c.hasPath("pekko.cluster.roles") && !c.getStringList("pekko.cluster.roles").isEmpty(),
                "a derived rank claims no role");
    }

    @Test
    void kubernetesProfileDiscoversThroughTheKubernetesApi() {
        NodeSettings s = new NodeSettings(ClusterProfile.KUBERNETES, 3, OptionalInt.empty(), "0.0.0.0", 2551, 8558, List.of(),
                List.of(), false);
        Config c = NodeConfig.build(s, BASE);
        assertEquals("kubernetes-api", c.getString("pekko.management.cluster.bootstrap.contact-point-discovery.discovery-method"));
        assertEquals("management", c.getString("pekko.management.cluster.bootstrap.contact-point-discovery.port-name"));
        assertEquals("org.apache.pekko.discovery.kubernetes.KubernetesApiServiceDiscovery",
                c.getString("pekko.discovery.kubernetes-api.class"));
    }

    @Test
    void tlsSwitchesArteryToTlsTcpWithMutualAuthentication() {
        Config c = NodeConfig.build(NodeSettings.local(BASE, 0, 1).withTls(true), BASE);
        assertEquals("tls-tcp", c.getString("pekko.remote.artery.transport"));
        assertTrue(c.getBoolean("pekko.remote.artery.ssl.config-ssl-engine.require-mutual-authentication"));
    }

    @Test
    void kubernetesWithTlsReadsTheKeyStoreFromTheSecretsMount() {
        NodeSettings s = new NodeSettings(ClusterProfile.KUBERNETES, 3, OptionalInt.empty(), "0.0.0.0", 2551, 8558, List.of(),
                List.of(), true);
        Config c = NodeConfig.build(s, BASE);
        assertEquals("tls-tcp", c.getString("pekko.remote.artery.transport"));
        // Unless GRAPHLANE_TLS_KEY_STORE / _TRUST_STORE name other files.
        org.junit.jupiter.api.Assumptions.assumeTrue(System.getenv("GRAPHLANE_TLS_KEY_STORE") == null
                && System.getenv("GRAPHLANE_TLS_TRUST_STORE") == null, "GRAPHLANE_TLS_KEY_STORE or _TRUST_STORE is set");
        assertEquals("/etc/graphlane/tls/node.p12", c.getString("pekko.remote.artery.ssl.config-ssl-engine.key-store"));
        assertEquals("/etc/graphlane/tls/node.p12", c.getString("pekko.remote.artery.ssl.config-ssl-engine.trust-store"));
    }

    @Test
    void badSettingsAreRefusedNamingTheOption() {
        assertTrue(assertThrows(ClusterConfigException.class, () -> NodeSettings.local(BASE, 3, 3)).getMessage()
                .contains("--rank"));
        assertTrue(assertThrows(ClusterConfigException.class, () -> ClusterProfile.parse("mesh")).getMessage()
                .contains("local, static, kubernetes"));
        assertTrue(assertThrows(ClusterConfigException.class, () -> new NodeSettings(ClusterProfile.STATIC, 1,
                OptionalInt.empty(), "h", 1, 2, List.of(), List.of("nohost"), false)).getMessage().contains("--seed"));
    }
}
