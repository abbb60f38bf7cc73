package io.graphlane.cluster;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigValueFactory;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Builds the configuration of one node: its own values over its profile block (and the TLS block when on)
 * over graphlane.cluster.profiles.common over the base configuration. The result is resolved and complete.
 */
public final class NodeConfig {
    /** The discovery service name the local profile's contact points are listed under. */
    public static final String LOCAL_SERVICE = "graphlane";
    /** The cluster role prefix a node with a given rank carries ({@code graphlane-rank-R}). */
    public static final String RANK_ROLE_PREFIX = "graphlane-rank-";

    private NodeConfig() {
    }

    /** The actor system name of every node built on {@code base}. */
    public static String systemName(Config base) {
        return base.getString("graphlane.cluster.system-name");
    }

    /** The complete configuration of the node {@code settings} describes, layered over {@code base}. */
    public static Config build(NodeSettings settings, Config base) {
        Config profiles = base.getConfig("graphlane.cluster.profiles");
        Config layered = profiles.getConfig(settings.profile().configName()).withFallback(profiles.getConfig("common"));
        if (settings.tls()) {
            layered = profiles.getConfig("tls").withFallback(layered);
        }
        return own(settings, systemName(base)).withFallback(layered).withFallback(base).resolve();
    }

    private static Config own(NodeSettings s, String systemName) {
        Map<String, Object> values = new LinkedHashMap<>();
        values.put("pekko.remote.artery.canonical.port", s.arteryPort());
        values.put("pekko.management.http.port", s.managementPort());
        if (s.profile() != ClusterProfile.KUBERNETES) {
            values.put("pekko.remote.artery.canonical.hostname", s.host());
            values.put("pekko.management.http.hostname", s.host());
        }
        if (s.rank().isPresent()) {
            values.put("pekko.cluster.roles", List.of(RANK_ROLE_PREFIX + s.rank().getAsInt()));
        }
        switch (s.profile()) {
            case LOCAL -> {
                List<Map<String, Object>> endpoints = new ArrayList<>();
                for (int port : s.contactPoints()) {
                    endpoints.add(Map.of("host", s.host(), "port", port));
                }
                values.put("pekko.discovery.config.services." + LOCAL_SERVICE + ".endpoints", endpoints);
                values.put("pekko.management.cluster.bootstrap.contact-point-discovery.required-contact-point-nr", s.nodes());
            }
            case STATIC -> {
                List<String> seeds = new ArrayList<>();
                for (String seed : s.seedNodes()) {
                    seeds.add("pekko://" + systemName + "@" + seed);
                }
                values.put("pekko.cluster.seed-nodes", seeds);
            }
            case KUBERNETES ->
                values.put("pekko.management.cluster.bootstrap.contact-point-discovery.required-contact-point-nr", s.nodes());
            default -> throw new IllegalStateException("unhandled profile " + s.profile());
        }
        Config own = com.typesafe.config.ConfigFactory.empty();
        for (Map.Entry<String, Object> e : values.entrySet()) {
            own = own.withValue(e.getKey(), ConfigValueFactory.fromAnyRef(e.getValue(), "graphlane node settings"));
        }
        return own;
    }
}
