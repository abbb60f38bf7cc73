package io.graphlane.cluster;

import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;

/** How a node finds the other members of its cluster; each names a block of graphlane.cluster.profiles. */
public enum ClusterProfile {
    /** Several nodes on one host: loopback ports by rank, Cluster Bootstrap over the nodes' management ports. */
    LOCAL,
    /** Fixed seed nodes; no Bootstrap. */
    STATIC,
    /** Cluster Bootstrap with Kubernetes API discovery. */
    KUBERNETES;

    /** The profile's name in configuration and on the command line. */
    public String configName() {
        return name().toLowerCase(Locale.ROOT);
    }

    /**
     * The profile called {@code name} (case-insensitive).
     *
     * @throws ClusterConfigException naming the option, the value and the accepted names
     */
    public static ClusterProfile parse(String name) {
        for (ClusterProfile p : values()) {
            if (p.configName().equalsIgnoreCase(name.trim())) {
                return p;
            }
        }
        throw new ClusterConfigException("--profile: unknown cluster profile '" + name + "'; expected one of "
                + Arrays.stream(values()).map(ClusterProfile::configName).collect(Collectors.joining(", ")));
    }
}
