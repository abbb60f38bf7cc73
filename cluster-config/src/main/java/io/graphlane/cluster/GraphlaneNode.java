package io.graphlane.cluster;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigException;
import com.typesafe.config.ConfigFactory;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import io.graphlane.cluster.guard.ArteryEndpoint;
import org.apache.pekko.Done;
import org.apache.pekko.actor.CoordinatedShutdown;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.actor.typed.javadsl.AskPattern;
import org.apache.pekko.management.cluster.bootstrap.ClusterBootstrap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One running cluster member: its actor system (guarded by {@link NodeGuardian}), Pekko Management HTTP
 * (health, members) and, under the local and kubernetes profiles, Cluster Bootstrap. Start order follows
 * Pekko's rule: Management first, then Bootstrap.
 *
 * <p>Stopping (SIGTERM, {@link #shutdown()}, {@code ActorSystem.terminate}) runs Pekko's coordinated shutdown, to
 * which the node adds, in phase order: readiness turns false ({@code before-service-unbind}); the hosted stages stop
 * through {@link StageHosting#stop} — lanes refuse new work, in-flight steps finish within
 * {@code graphlane.node.shutdown-grace}, then weights, caches and backends are released
 * ({@code service-requests-done}); Pekko Management unbinds ({@code service-stop}). A serving node's HTTP server
 * drains and unbinds in {@code service-unbind}; the node leaves the cluster in Pekko's own {@code cluster-leave}.
 */
public final class GraphlaneNode implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(GraphlaneNode.class);

    private final ActorSystem<NodeGuardian.Command> system;
    private final CompletableFuture<NodeIdentity> hosted;
    private final NodeSettings settings;

    private GraphlaneNode(ActorSystem<NodeGuardian.Command> system, CompletableFuture<NodeIdentity> hosted,
                          NodeSettings settings) {
        this.system = system;
        this.hosted = hosted;
        this.settings = settings;
    }

    /**
     * Starts the node {@code settings} describes over {@code base} (usually {@code ConfigFactory.load()}),
     * hosting its share of {@code stages} stages through {@code hosting}. Returns at once; the node joins
     * and takes its rank in the background ({@link #hosted()}).
     */
    public static GraphlaneNode start(NodeSettings settings, Config base, int stages, StageHosting hosting) {
        return start(settings, base, ParallelLayout.pipeline(settings.nodes(), stages), hosting);
    }

    /**
     * Starts the node {@code settings} describes over {@code base}, holding its share of {@code layout} (whose node
     * count must be the settings' one) through {@code hosting}. Returns at once, like {@link #start(NodeSettings, Config,
     * int, StageHosting)}.
     */
    public static GraphlaneNode start(NodeSettings settings, Config base, ParallelLayout layout, StageHosting hosting) {
        if (layout.nodes() != settings.nodes()) {
            throw new ClusterConfigException("the layout is for " + layout.nodes() + " nodes but --nodes is " + settings.nodes());
        }
        Config built = NodeConfig.build(settings, base);
        Duration grace = shutdownGrace(built);
        String phase = "pekko.coordinated-shutdown.phases.service-requests-done.timeout";
        Duration phaseTimeout = grace.plusSeconds(5);
        if (built.hasPath(phase) && built.getDuration(phase).compareTo(phaseTimeout) > 0) {
            phaseTimeout = built.getDuration(phase);
        }
        ArteryEndpoint artery = ArteryEndpoint.open(
                ConfigFactory.parseString(phase + " = " + phaseTimeout.toMillis() + "ms").withFallback(built));
        Config config = artery.config();
        Duration formationTimeout = config.getDuration("graphlane.cluster.formation-timeout");
        CompletableFuture<NodeIdentity> hosted = new CompletableFuture<>();
        ActorSystem<NodeGuardian.Command> system;
        try {
            system = ActorSystem.create(NodeGuardian.create(settings.rank(), layout, hosting, formationTimeout, hosted),
                    NodeConfig.systemName(base), config);
        } catch (RuntimeException e) {
            artery.close();
            throw e;
        }
        // The guard outlives Artery: the node leaves the cluster over it in coordinated shutdown's last phases.
        system.getWhenTerminated().whenComplete((done, failure) -> artery.close());
        addShutdownTasks(system, grace);
        try {
            ManagementEndpoint.start(system, config);
            if (settings.profile() != ClusterProfile.STATIC) {
                ClusterBootstrap.get(Adapter.toClassic(system)).start();
            }
        } catch (RuntimeException e) {
            system.terminate();
            throw e;
        }
        LOG.info("graphlane node started: profile {}, {} nodes, rank {}, artery {}:{}{}, management port {}",
                settings.profile().configName(), settings.nodes(),
                settings.rank().isPresent() ? settings.rank().getAsInt() : "derived", settings.host(),
                config.getInt("pekko.remote.artery.canonical.port"),
                artery.guard().map(g -> " (plain TCP behind the frame guard)").orElse(""), settings.managementPort());
        return new GraphlaneNode(system, hosted, settings);
    }

    /** {@code graphlane.node.shutdown-grace}: how long in-flight steps may take to finish once the node stops. */
    static Duration shutdownGrace(Config config) {
        String key = "graphlane.node.shutdown-grace";
        Duration grace;
        try {
            grace = config.getDuration(key);
        } catch (ConfigException e) {
            throw new ClusterConfigException(key + " must be a duration such as 30s: " + e.getMessage());
        }
        if (grace.isNegative() || grace.isZero()) {
            throw new ClusterConfigException(key + " must be positive, got " + grace);
        }
        return grace;
    }

    private static void addShutdownTasks(ActorSystem<NodeGuardian.Command> system, Duration grace) {
        CoordinatedShutdown shutdown = CoordinatedShutdown.get(system);
        NodeReadiness readiness = NodeReadiness.get(system);
        shutdown.addTask(CoordinatedShutdown.PhaseBeforeServiceUnbind(), "graphlane-not-ready", () -> {
            readiness.markStopping();
            return CompletableFuture.completedFuture(Done.getInstance());
        });
        shutdown.addTask(CoordinatedShutdown.PhaseServiceRequestsDone(), "graphlane-stop-stages", () ->
                AskPattern.<NodeGuardian.Command, Done>ask(system, NodeGuardian.StopStages::new, grace, system.scheduler())
                        .exceptionally(late -> {
                            LOG.warn("graphlane node: the hosted stages did not stop within graphlane.node.shutdown-grace ({} ms);"
                                    + " stopping anyway: work never started is dropped, started work keeps what it holds until"
                                    + " it ends", grace.toMillis());
                            return Done.getInstance();
                        }));
    }

    /** The node's actor system. */
    public ActorSystem<NodeGuardian.Command> system() {
        return system;
    }

    /** The settings the node was started with. */
    public NodeSettings settings() {
        return settings;
    }

    /** Completes with the node's identity once its rank is taken and its stage lanes are up and registered. */
    public CompletionStage<NodeIdentity> hosted() {
        return hosted;
    }

    /** The node's readiness state. */
    public NodeReadiness readiness() {
        return NodeReadiness.get(system);
    }

    /**
     * Stops the node through coordinated shutdown (readiness off, stages stopped and released within the grace,
     * management unbound, the cluster left) and terminates the actor system; completes when it has terminated.
     */
    public CompletionStage<Done> shutdown() {
        system.terminate();
        return system.getWhenTerminated();
    }

    /** Starts {@link #shutdown()} without waiting for it. */
    @Override
    public void close() {
        system.terminate();
    }
}
