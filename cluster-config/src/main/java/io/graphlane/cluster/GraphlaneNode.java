package io.graphlane.cluster;

import com.typesafe.config.Config;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.management.cluster.bootstrap.ClusterBootstrap;
import org.apache.pekko.management.javadsl.PekkoManagement;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One running cluster member: its actor system (guarded by {@link NodeGuardian}), Pekko Management HTTP
 * (health, members) and, under the local and kubernetes profiles, Cluster Bootstrap. Start order follows
 * Pekko's rule: Management first, then Bootstrap.
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
        Config config = NodeConfig.build(settings, base);
        Duration formationTimeout = config.getDuration("graphlane.cluster.formation-timeout");
        CompletableFuture<NodeIdentity> hosted = new CompletableFuture<>();
        ActorSystem<NodeGuardian.Command> system = ActorSystem.create(
                NodeGuardian.create(settings.rank(), layout, hosting, formationTimeout, hosted),
                NodeConfig.systemName(base), config);
        try {
            PekkoManagement.get(Adapter.toClassic(system)).start();
            if (settings.profile() != ClusterProfile.STATIC) {
                ClusterBootstrap.get(Adapter.toClassic(system)).start();
            }
        } catch (RuntimeException e) {
            system.terminate();
            throw e;
        }
        LOG.info("graphlane node started: profile {}, {} nodes, rank {}, artery {}:{}, management port {}",
                settings.profile().configName(), settings.nodes(),
                settings.rank().isPresent() ? settings.rank().getAsInt() : "derived", settings.host(), settings.arteryPort(),
                settings.managementPort());
        return new GraphlaneNode(system, hosted, settings);
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

    /** Leaves the cluster and terminates the actor system; completes when it has terminated. */
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
