package io.graphlane.cluster;

import com.typesafe.config.Config;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.OptionalInt;

/**
 * What one node needs to join its cluster: the profile, the expected member count, its rank (given, or
 * derived from membership when empty), where it listens, and how it finds the others.
 *
 * @param profile how members find each other
 * @param nodes how many members the cluster has when complete; positive
 * @param rank this node's rank in {@code [0, nodes)}, or empty to derive it from membership
 * @param host the address Artery and Management bind to and advertise
 * @param arteryPort the cluster transport port (0 for any free port)
 * @param managementPort the Pekko Management HTTP port
 * @param contactPoints the management ports of every member on {@code host} (local profile), in rank order
 * @param seedNodes the seed node addresses as {@code host:port} (static profile)
 * @param tls whether Artery runs over TLS (profiles.tls)
 */
public record NodeSettings(ClusterProfile profile, int nodes, OptionalInt rank, String host, int arteryPort,
                           int managementPort, List<Integer> contactPoints, List<String> seedNodes, boolean tls) {

    /** Validates every field; the error names the option, the expected and the found value. */
    public NodeSettings {
        Objects.requireNonNull(profile, "profile");
        Objects.requireNonNull(rank, "rank");
        Objects.requireNonNull(host, "host");
        contactPoints = List.copyOf(contactPoints);
        seedNodes = List.copyOf(seedNodes);
        if (nodes < 1) {
            throw new ClusterConfigException("--nodes must be >= 1, got " + nodes);
        }
        if (rank.isPresent() && (rank.getAsInt() < 0 || rank.getAsInt() >= nodes)) {
            throw new ClusterConfigException("--rank must be in [0, " + nodes + ") for --nodes " + nodes + ", got "
                    + rank.getAsInt());
        }
        checkPort("artery port", arteryPort);
        checkPort("management port", managementPort);
        if (profile == ClusterProfile.LOCAL && contactPoints.size() != nodes) {
            throw new ClusterConfigException("local profile: expected " + nodes + " contact points (one management port per"
                    + " node), got " + contactPoints.size() + ": " + contactPoints);
        }
        if (profile == ClusterProfile.STATIC && seedNodes.isEmpty()) {
            throw new ClusterConfigException("static profile: at least one --seed host:port is required, got none");
        }
        for (String seed : seedNodes) {
            int colon = seed.lastIndexOf(':');
            if (colon <= 0 || colon == seed.length() - 1 || !seed.substring(colon + 1).chars().allMatch(Character::isDigit)) {
                throw new ClusterConfigException("--seed: expected host:port, got '" + seed + "'");
            }
        }
    }

    /**
     * The local-profile settings of rank {@code rank} of {@code nodes}: Artery on artery-base-port + rank and
     * Management on management-base-port + rank of graphlane.cluster.local, contact points on the management
     * ports of ranks 0 .. nodes-1.
     */
    public static NodeSettings local(Config config, int rank, int nodes) {
        Config local = config.getConfig("graphlane.cluster.local");
        int arteryBase = local.getInt("artery-base-port");
        int managementBase = local.getInt("management-base-port");
        List<Integer> contacts = new ArrayList<>();
        for (int r = 0; r < nodes; r++) {
            contacts.add(managementBase + r);
        }
        return new NodeSettings(ClusterProfile.LOCAL, nodes, OptionalInt.of(rank), local.getString("host"),
                arteryBase + rank, managementBase + rank, contacts, List.of(), false);
    }

    /** These settings with Artery over TLS switched on or off. */
    public NodeSettings withTls(boolean on) {
        return new NodeSettings(profile, nodes, rank, host, arteryPort, managementPort, contactPoints, seedNodes, on);
    }

    private static void checkPort(String what, int port) {
        if (port < 0 || port > 65535) {
            throw new ClusterConfigException(what + " must be in [0, 65535], got " + port);
        }
    }
}
