package io.graphlane.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.Config;
import io.graphlane.backend.cpu.CpuBackend;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two nodes form a cluster over Artery TLS. The key store is made at test time with the JDK's keytool (one
 * self-signed EC key pair, used as both key store and trust store; {@link TestKeyStores}), so no secret is checked in.
 */
class TlsFormationTest {

    @Test
    void twoNodesFormOverTls(@TempDir Path dir) throws Exception {
        Path keyStore = TestKeyStores.selfSigned(dir.resolve("node.p12"), "graphlane-test");
        Config tls = TestKeyStores.configSslEngine(keyStore, keyStore)
                .atPath("graphlane.cluster.profiles.tls.pekko.remote.artery.ssl.config-ssl-engine");
        Config base = tls.withFallback(TestNodes.base());
        List<GraphlaneNode> nodes = new ArrayList<>();
        try {
            for (NodeSettings s : TestNodes.localCluster(2)) {
                nodes.add(GraphlaneNode.start(s.withTls(true), base, 2, new LaneStageHosting<>(new CpuBackend())));
            }
            Set<Integer> ranks = new java.util.HashSet<>();
            for (GraphlaneNode n : nodes) {
                ranks.add(n.hosted().toCompletableFuture().get(60, TimeUnit.SECONDS).rank());
                assertEquals("tls-tcp", n.system().settings().config().getString("pekko.remote.artery.transport"));
            }
            assertEquals(Set.of(0, 1), ranks);
            String members = TestNodes.get(nodes.get(0).settings().managementPort(), "/cluster/members").body();
            Set<String> addresses = nodes.stream().map(n -> n.system().address().toString()).collect(Collectors.toSet());
            for (String a : addresses) {
                assertTrue(members.contains(a), a + " in " + members);
            }
        } finally {
            // Leave together: a node leaving alone waits for the other's acknowledgement, which a loaded machine delays.
            java.util.List<java.util.concurrent.CompletableFuture<?>> leaving = new java.util.ArrayList<>();
            for (GraphlaneNode n : nodes) {
                leaving.add(n.shutdown().toCompletableFuture());
            }
            java.util.concurrent.CompletableFuture.allOf(leaving.toArray(java.util.concurrent.CompletableFuture[]::new))
                    .get(90, TimeUnit.SECONDS);
        }
    }
}
