package io.graphlane.cluster.guard;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigValueFactory;
import io.graphlane.cluster.ClusterConfigException;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.UnknownHostException;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where a node's Artery listens, decided before its actor system starts:
 * <ul>
 *   <li>Plain TCP off loopback is refused unless allowed: with {@code transport = tcp} (no {@code --tls}), an address
 *       Artery binds or advertises that is not a loopback address fails the start, naming {@code --tls} and
 *       {@code --allow-plaintext} ({@code graphlane.cluster.allow-plaintext}), since any host that reaches it could
 *       join the cluster and send its actors messages.</li>
 *   <li>Plain TCP runs behind an {@link ArteryFrameGuard} ({@code graphlane.cluster.artery-guard.enabled}): the guard
 *       binds where Artery would have ({@code bind.hostname}/{@code bind.port}, else the canonical ones) and Artery
 *       itself binds a free loopback port, still advertising its canonical address. The payload sockets of collective
 *       groups keep binding the public host ({@link #PUBLIC_BIND_HOSTNAME}).</li>
 *   <li>TLS ({@code tls-tcp}) needs neither: a peer without a trusted certificate fails the handshake before any frame
 *       is read.</li>
 * </ul>
 */
public final class ArteryEndpoint implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ArteryEndpoint.class);

    /** The key under which a guarded node records the host its guard (and so its payload sockets) bind. */
    public static final String PUBLIC_BIND_HOSTNAME = "graphlane.cluster.artery-guard.public-bind-hostname";
    private static final String ARTERY = "pekko.remote.artery.";

    private final Config config;
    private final ArteryFrameGuard guard;

    private ArteryEndpoint(Config config, ArteryFrameGuard guard) {
        this.config = config;
        this.guard = guard;
    }

    /**
     * Checks {@code config} (a node's complete configuration) against the plain-text rule and, for plain TCP with the
     * guard enabled, starts the guard; the caller starts its actor system with {@link #config()} and closes this once
     * the system has terminated.
     *
     * @throws ClusterConfigException naming the flag when plain TCP would leave loopback, or the guard's address when it
     *                                cannot be bound
     */
    public static ArteryEndpoint open(Config config) {
        String transport = config.getString(ARTERY + "transport");
        boolean tls = "tls-tcp".equals(transport);
        String canonicalHost = hostname(config.getString(ARTERY + "canonical.hostname"));
        String configuredBind = config.getString(ARTERY + "bind.hostname");
        String bindHost = configuredBind.isEmpty() ? canonicalHost : hostname(configuredBind);
        int canonicalPort = config.getInt(ARTERY + "canonical.port");
        String configuredBindPort = config.getString(ARTERY + "bind.port");
        int bindPort = configuredBindPort.isEmpty() ? canonicalPort : config.getInt(ARTERY + "bind.port");
        if (!tls && !config.getBoolean("graphlane.cluster.allow-plaintext")) {
            for (String host : new String[] {bindHost, canonicalHost}) {
                if (!isLoopback(host)) {
                    throw new ClusterConfigException("Artery would " + (host.equals(bindHost) ? "listen on " : "be advertised as ") + host
                            + " in plain text (transport " + transport + "): any host that reaches it could join the cluster and send"
                            + " its actors messages. Start every node with --tls (see docs/cluster.md#tls), or with"
                            + " --allow-plaintext (graphlane.cluster.allow-plaintext = on) on a network you trust");
                }
            }
        }
        if (!"tcp".equals(transport) || !config.getBoolean("graphlane.cluster.artery-guard.enabled")) {
            return new ArteryEndpoint(config, null);
        }
        Config limitsConfig = config.getConfig("graphlane.cluster.artery-guard");
        ArteryFrameGuard.Limits limits;
        try {
            limits = new ArteryFrameGuard.Limits(limitsConfig.getDuration("header-timeout"), limitsConfig.getInt("max-connections"),
                    limitsConfig.getInt("max-connections-per-address"));
        } catch (IllegalArgumentException e) {
            throw new ClusterConfigException(e.getMessage());
        }
        InetAddress loopback = InetAddress.getLoopbackAddress();
        ArteryFrameGuard guard;
        try {
            guard = ArteryFrameGuard.start(new InetSocketAddress(bindHost, bindPort), new InetSocketAddress(loopback, freeLoopbackPort()),
                    bytes(config, ARTERY + "advanced.maximum-frame-size"), bytes(config, ARTERY + "advanced.maximum-large-frame-size"), limits);
        } catch (IOException e) {
            throw new ClusterConfigException("cannot bind Artery's address " + bindHost + ":" + bindPort + ": " + e.getMessage());
        }
        int publicPort = guard.address().getPort();
        Config guarded = config
                .withValue(ARTERY + "bind.hostname", ConfigValueFactory.fromAnyRef(loopback.getHostAddress(), "graphlane artery guard"))
                .withValue(ARTERY + "bind.port", ConfigValueFactory.fromAnyRef(guard.artery().getPort(), "graphlane artery guard"))
                .withValue(ARTERY + "canonical.port", ConfigValueFactory.fromAnyRef(canonicalPort == 0 ? publicPort : canonicalPort,
                        "graphlane artery guard"))
                .withValue(PUBLIC_BIND_HOSTNAME, ConfigValueFactory.fromAnyRef(bindHost, "graphlane artery guard"));
        LOG.debug("Artery guard on {} forwards checked connections to Artery on {}", guard.address(), guard.artery());
        return new ArteryEndpoint(guarded, guard);
    }

    /** The configuration to start the actor system with. */
    public Config config() {
        return config;
    }

    /** The guard in front of Artery, when Artery runs plain TCP with the guard enabled. */
    public Optional<ArteryFrameGuard> guard() {
        return Optional.ofNullable(guard);
    }

    /** Closes the guard, if any: call once the actor system has terminated. */
    @Override
    public void close() {
        if (guard != null) {
            guard.close();
        }
    }

    /** Pekko's hostname placeholders resolved as Pekko resolves them. */
    private static String hostname(String configured) {
        try {
            return switch (configured) {
                case "<getHostAddress>" -> InetAddress.getLocalHost().getHostAddress();
                case "<getHostName>" -> InetAddress.getLocalHost().getHostName();
                default -> configured;
            };
        } catch (UnknownHostException e) {
            throw new ClusterConfigException("pekko.remote.artery.canonical.hostname is " + configured
                    + " but this host's own address cannot be found: " + e.getMessage());
        }
    }

    private static boolean isLoopback(String host) {
        try {
            return InetAddress.getByName(host).isLoopbackAddress();
        } catch (UnknownHostException e) {
            throw new ClusterConfigException("Artery's host '" + host + "' does not resolve: " + e.getMessage());
        }
    }

    private static int bytes(Config config, String key) {
        long n = config.getBytes(key);
        if (n > Integer.MAX_VALUE) {
            throw new ClusterConfigException(key + " must be below 2 GiB, got " + n + " bytes");
        }
        return (int) n;
    }

    /** A loopback port free now, for Artery to bind right after (nothing else on this host is expected to take it between). */
    private static int freeLoopbackPort() throws IOException {
        try (ServerSocket probe = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return probe.getLocalPort();
        }
    }
}
