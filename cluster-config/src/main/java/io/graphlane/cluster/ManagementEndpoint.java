package io.graphlane.cluster;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigException;
import io.graphlane.server.ConnectionLimits;
import io.graphlane.server.LimitedBinding;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.Done;
import org.apache.pekko.actor.CoordinatedShutdown;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.http.javadsl.ServerBinding;
import org.apache.pekko.management.javadsl.PekkoManagement;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Serves Pekko Management's routes ({@code /alive}, {@code /ready}, {@code /cluster/members}, Cluster Bootstrap's) on
 * the management port under {@link ConnectionLimits} ({@code graphlane.cluster.management}), in place of
 * {@code PekkoManagement.start()}: that binds with Pekko HTTP's settings only, which have no header-read timeout and
 * no per-client cap, and past {@code max-connections} stop accepting, so that a crowd of idle connections leaves
 * {@code /alive} unanswered (and Kubernetes restarts the pod). The routes are Management's own
 * ({@code PekkoManagement.getRoutes()}, which also gives Cluster Bootstrap its contact point: the configured host and
 * port), bound where Management would bind them, with the remote-address header it sets.
 */
public final class ManagementEndpoint {
    private static final Logger LOG = LoggerFactory.getLogger(ManagementEndpoint.class);
    /** The block of {@code reference.conf} the limits are read from. */
    static final String LIMITS = "graphlane.cluster.management";

    private ManagementEndpoint() {
    }

    /**
     * Binds Management's routes for {@code system} under the limits of {@code config} (the node's configuration) and
     * unbinds them in coordinated shutdown's {@code service-stop} phase. Returns at once; a port that cannot be bound is
     * logged, as Management logs it.
     *
     * @throws ClusterConfigException naming the key when a limit is not valid
     */
    public static CompletionStage<ServerBinding> start(ActorSystem<?> system, Config config) {
        ConnectionLimits limits = limits(config);
        PekkoManagement management = PekkoManagement.get(Adapter.toClassic(system));
        var http = management.settings().Http();
        String host = http.EffectiveBindHostname();
        int port = http.EffectiveBindPort();
        CompletionStage<ServerBinding> binding = LimitedBinding.bind(system, "Pekko Management", host, port, limits, Optional.empty(),
                settings -> settings.withRemoteAddressHeader(true), management.getRoutes().flow(system));
        binding.whenComplete((bound, failed) -> {
            if (failed != null) {
                LOG.error("cannot bind Pekko Management (HTTP) on {}:{}: {}", host, port, failed.getMessage());
            } else {
                LOG.info("Pekko Management (HTTP) on {}:{}, at most {} connections ({} per client)", host,
                        bound.localAddress().getPort(), limits.maxConnections(), limits.maxConnectionsPerClient());
            }
        });
        CoordinatedShutdown.get(system).addTask(CoordinatedShutdown.PhaseServiceStop(), "graphlane-management-unbind",
                () -> binding.thenCompose(ServerBinding::unbind).exceptionally(notBound -> Done.getInstance()));
        return binding;
    }

    /** The management port's limits: {@code graphlane.cluster.management} of {@code config}. */
    static ConnectionLimits limits(Config config) {
        Duration headerRead = positive(config, LIMITS + ".header-read-timeout");
        Duration idle = positive(config, LIMITS + ".idle-timeout");
        int total = atLeastOne(config, LIMITS + ".max-connections");
        int perClient = atLeastOne(config, LIMITS + ".max-connections-per-client");
        if (perClient > total) {
            throw new ClusterConfigException(LIMITS + ".max-connections-per-client must be at most " + LIMITS + ".max-connections ("
                    + total + "), got " + perClient);
        }
        return new ConnectionLimits(headerRead, idle, perClient, total);
    }

    private static Duration positive(Config config, String key) {
        Duration d;
        try {
            d = config.getDuration(key);
        } catch (ConfigException e) {
            throw new ClusterConfigException(key + " must be a duration such as 10s: " + e.getMessage());
        }
        if (d.isNegative() || d.isZero()) {
            throw new ClusterConfigException(key + " must be positive, got " + d);
        }
        return d;
    }

    private static int atLeastOne(Config config, String key) {
        int n;
        try {
            n = config.getInt(key);
        } catch (ConfigException e) {
            throw new ClusterConfigException(key + " must be a whole number: " + e.getMessage());
        }
        if (n < 1) {
            throw new ClusterConfigException(key + " must be >= 1, got " + n);
        }
        return n;
    }
}
