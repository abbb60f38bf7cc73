package io.graphlane.cluster.collective;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.graphlane.backend.cpu.collective.CollectiveSettings;
import io.graphlane.cluster.ClusterProfile;
import io.graphlane.cluster.MembersUp;
import io.graphlane.cluster.NodeConfig;
import io.graphlane.cluster.NodeSettings;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalInt;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.Join;

/**
 * Nodes in one JVM for collective tests: actor systems configured as graphlane nodes (the common profile, so the rank
 * actors use the large-message stream), each on a port the OS picks (never a fixed local-cluster port), joined into
 * one cluster over Artery on loopback. Receptionist gossip is quickened so that a group forms in well under a second.
 */
final class CollectiveNodes {
    private CollectiveNodes() {
    }

    /** The configuration of one test node whose collective payload travels over {@code payload} (socket or artery). */
    static Config config(String payload) {
        Config base = ConfigFactory.parseString("graphlane.cluster.collective.payload = " + payload + "\n" + """
                pekko.cluster.jmx.multi-mbeans-in-same-jvm = on
                pekko.loglevel = WARNING
                pekko.coordinated-shutdown.run-by-jvm-shutdown-hook = off
                pekko.cluster.typed.receptionist.distributed-data.gossip-interval = 100ms
                pekko.cluster.typed.receptionist.distributed-data.notify-subscribers-interval = 50ms
                """).withFallback(ConfigFactory.load());
        NodeSettings settings = new NodeSettings(ClusterProfile.STATIC, 1, OptionalInt.empty(), "127.0.0.1", 0, 0, List.of(),
                List.of("127.0.0.1:1"), false);
        // Joined programmatically below: no seed nodes, so no port needs to be known in advance.
        return ConfigFactory.parseString("pekko.cluster.seed-nodes = []").withFallback(NodeConfig.build(settings, base));
    }

    /** {@code n} nodes joined into one cluster, every one seeing all {@code n} members up, with the default payload plane. */
    static List<ActorSystem<Void>> cluster(int n) throws Exception {
        return cluster(n, ConfigFactory.load().getString("graphlane.cluster.collective.payload"));
    }

    /** {@code n} nodes joined into one cluster whose collective payload travels over {@code payload} (socket or artery). */
    static List<ActorSystem<Void>> cluster(int n, String payload) throws Exception {
        return cluster(n, payload, ConfigFactory.empty());
    }

    /** Like {@link #cluster(int, String)}, every node's configuration under {@code overrides} (Artery TLS, say). */
    static List<ActorSystem<Void>> cluster(int n, String payload, Config overrides) throws Exception {
        List<ActorSystem<Void>> systems = new ArrayList<>();
        Config config = overrides.withFallback(config(payload));
        for (int i = 0; i < n; i++) {
            systems.add(ActorSystem.create(Behaviors.empty(), NodeConfig.systemName(config), config));
        }
        var first = Cluster.get(systems.get(0)).selfMember().address();
        for (ActorSystem<Void> s : systems) {
            Cluster.get(s).manager().tell(Join.create(first));
        }
        for (ActorSystem<Void> s : systems) {
            MembersUp.await(s, n, Duration.ofSeconds(30)).toCompletableFuture().get(40, TimeUnit.SECONDS);
        }
        return systems;
    }


    /** Rank i of {@code group} on node i, for the first {@code size} nodes; waits for every rank to join. */
    static List<ClusterCollectiveTransport> join(List<ActorSystem<Void>> nodes, String group, int size, CollectiveSettings settings)
            throws Exception {
        List<CompletableFuture<ClusterCollectiveTransport>> joining = new ArrayList<>();
        for (int r = 0; r < size; r++) {
            joining.add(ClusterCollectives.join(nodes.get(r), group, r, size, settings, Duration.ofSeconds(20)).toCompletableFuture());
        }
        List<ClusterCollectiveTransport> joined = new ArrayList<>();
        for (CompletableFuture<ClusterCollectiveTransport> j : joining) {
            joined.add(j.get(30, TimeUnit.SECONDS));
        }
        return joined;
    }

    /** Closes every transport at once (each waits for the others' acknowledgement) and waits for all. */
    static void closeAll(List<ClusterCollectiveTransport> transports) throws Exception {
        List<CompletableFuture<Void>> closing = new ArrayList<>();
        for (ClusterCollectiveTransport t : transports) {
            closing.add(t.closeAsync().toCompletableFuture());
        }
        CompletableFuture.allOf(closing.toArray(CompletableFuture[]::new)).get(60, TimeUnit.SECONDS);
    }

    /** Terminates every system and waits for it. */
    static void terminate(List<ActorSystem<Void>> systems) throws Exception {
        for (ActorSystem<Void> s : systems) {
            s.terminate();
        }
        for (ActorSystem<Void> s : systems) {
            s.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
        }
    }
}
