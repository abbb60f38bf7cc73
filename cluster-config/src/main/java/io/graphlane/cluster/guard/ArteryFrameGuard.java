package io.graphlane.cluster.guard;

import io.graphlane.core.log.WarningGate;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Listens where Artery (plain TCP) would and forwards each connection to Artery on a loopback port only after its
 * bytes pass {@link ArteryFraming}: a peer that sends a bad magic, stream id, frame length or protocol version is cut
 * at that byte and never reaches Artery, so no frame can stall or kill the inbound stream every connection shares.
 * A connection must deliver its 5-byte header within {@link Limits#headerTimeout()} (Artery is connected only then);
 * connections over {@link Limits#maxConnections()} in all or {@link Limits#maxConnectionsPerAddress()} from one address
 * are closed at once. Each refusal is one warning at most every 10 s (with the count of those in between), the rest at
 * debug.
 *
 * <p>Each forwarded connection has two daemon threads, one per direction (Artery's inbound connections carry bytes
 * one way; the other thread only notices their end). Bytes are checked where they lie in the read buffer, without a
 * copy of their own.
 */
public final class ArteryFrameGuard implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ArteryFrameGuard.class);
    private static final int BUFFER_BYTES = 64 * 1024;

    /**
     * @param headerTimeout how long a connection may take to send Artery's connection header before it is closed
     * @param maxConnections connections forwarded at once, from everyone
     * @param maxConnectionsPerAddress connections forwarded at once from one remote address
     */
    public record Limits(Duration headerTimeout, int maxConnections, int maxConnectionsPerAddress) {
        public Limits {
            if (headerTimeout.isNegative() || headerTimeout.isZero()) {
                throw new IllegalArgumentException("graphlane.cluster.artery-guard.header-timeout must be positive, got " + headerTimeout);
            }
            if (maxConnections < 1) {
                throw new IllegalArgumentException("graphlane.cluster.artery-guard.max-connections must be >= 1, got " + maxConnections);
            }
            if (maxConnectionsPerAddress < 1) {
                throw new IllegalArgumentException("graphlane.cluster.artery-guard.max-connections-per-address must be >= 1, got "
                        + maxConnectionsPerAddress);
            }
        }
    }

    private final ServerSocketChannel server;
    private final InetSocketAddress artery;
    private final int maxFrameBytes;
    private final int maxLargeFrameBytes;
    private final Limits limits;
    private final ScheduledExecutorService deadlines;
    private final Set<Connection> open = ConcurrentHashMap.newKeySet();
    private final Map<InetAddress, Integer> perAddress = new ConcurrentHashMap<>();
    private final AtomicLong refused = new AtomicLong();
    private final AtomicLong forwarded = new AtomicLong();
    private final WarningGate warnings = new WarningGate(Duration.ofSeconds(10));
    private final AtomicBoolean closed = new AtomicBoolean();

    private ArteryFrameGuard(ServerSocketChannel server, InetSocketAddress artery, int maxFrameBytes, int maxLargeFrameBytes,
                             Limits limits) {
        this.server = server;
        this.artery = artery;
        this.maxFrameBytes = maxFrameBytes;
        this.maxLargeFrameBytes = maxLargeFrameBytes;
        this.limits = limits;
        this.deadlines = Executors.newSingleThreadScheduledExecutor(r -> daemon(r, "graphlane-artery-guard-deadlines"));
    }

    /**
     * Binds {@code listen} (port 0: any free port) and forwards checked connections to Artery at {@code artery}, whose
     * {@code maximum-frame-size} and {@code maximum-large-frame-size} are given.
     *
     * @throws IOException if {@code listen} cannot be bound
     */
    public static ArteryFrameGuard start(InetSocketAddress listen, InetSocketAddress artery, int maxFrameBytes, int maxLargeFrameBytes,
                                         Limits limits) throws IOException {
        new ArteryFraming(maxFrameBytes, maxLargeFrameBytes); // checks the sizes before anything is bound
        ServerSocketChannel server = ServerSocketChannel.open();
        try {
            server.setOption(StandardSocketOptions.SO_REUSEADDR, true);
            server.bind(listen, 256);
        } catch (IOException | RuntimeException e) {
            server.close();
            throw e;
        }
        ArteryFrameGuard guard = new ArteryFrameGuard(server, artery, maxFrameBytes, maxLargeFrameBytes, limits);
        daemon(guard::acceptLoop, "graphlane-artery-guard-accept").start();
        return guard;
    }

    /** The address it listens on (the port bound, if 0 was asked for). */
    public InetSocketAddress address() {
        try {
            return (InetSocketAddress) server.getLocalAddress();
        } catch (IOException e) {
            throw new IllegalStateException("the guard's socket is closed", e);
        }
    }

    /** Where it forwards to: Artery's own loopback address. */
    public InetSocketAddress artery() {
        return artery;
    }

    /** Connections open now (waiting for their header, or forwarded). */
    public int connections() {
        return open.size();
    }

    /** Connections refused or cut since the start: over a cap, silent past the deadline, or breaking the framing. */
    public long refused() {
        return refused.get();
    }

    /** Connections whose header passed, and that were then forwarded to Artery, since the start. */
    public long forwarded() {
        return forwarded.get();
    }

    /** Stops listening and closes every connection. */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        closeQuietly(server);
        open.forEach(Connection::close);
        deadlines.shutdownNow();
    }

    private void acceptLoop() {
        while (!closed.get()) {
            SocketChannel client;
            try {
                client = server.accept();
            } catch (ClosedChannelException e) {
                return;
            } catch (IOException e) {
                if (closed.get()) {
                    return;
                }
                LOG.warn("Artery guard on {}: accept failed: {}", server.socket().getLocalSocketAddress(), e.toString());
                continue;
            }
            admit(client);
        }
    }

    private void admit(SocketChannel client) {
        InetAddress from = remoteAddress(client);
        int fromThere = perAddress.merge(from, 1, Integer::sum);
        if (fromThere > limits.maxConnectionsPerAddress()) {
            release(from);
            refuse(client, from, "it already has " + limits.maxConnectionsPerAddress()
                    + " connections open (graphlane.cluster.artery-guard.max-connections-per-address)");
            return;
        }
        if (open.size() >= limits.maxConnections()) {
            release(from);
            refuse(client, from, "the node already has " + limits.maxConnections()
                    + " connections open (graphlane.cluster.artery-guard.max-connections)");
            return;
        }
        Connection connection = new Connection(client, from);
        open.add(connection);
        if (closed.get()) {
            connection.close();
            return;
        }
        connection.start();
    }

    /** Counts one connection from {@code from} less, forgetting the address at none. */
    private void release(InetAddress from) {
        perAddress.computeIfPresent(from, (a, n) -> n <= 1 ? null : n - 1);
    }

    private void refuse(SocketChannel client, InetAddress from, String why) {
        refused(from, why);
        closeQuietly(client);
    }

    private void refused(InetAddress from, String why) {
        refused.incrementAndGet();
        long heldBack = warnings.admit();
        if (heldBack == WarningGate.HELD_BACK) {
            LOG.debug("Artery guard on {}: refused a connection from {}: {}", address(), from.getHostAddress(), why);
        } else {
            LOG.warn("Artery guard on {}: refused a connection from {}: {}{}", address(), from.getHostAddress(), why,
                    WarningGate.heldBackSuffix(heldBack));
        }
    }

    /** One client connection: its header deadline, its check, and once the header passed, its link to Artery. */
    private final class Connection {
        private final SocketChannel client;
        private final InetAddress from;
        private final ArteryFraming framing = new ArteryFraming(maxFrameBytes, maxLargeFrameBytes);
        private final AtomicBoolean ended = new AtomicBoolean();
        private volatile SocketChannel upstream;
        private volatile ScheduledFuture<?> deadline;

        Connection(SocketChannel client, InetAddress from) {
            this.client = client;
            this.from = from;
        }

        void start() {
            try {
                deadline = deadlines.schedule(() -> cut("it sent no Artery connection header within "
                        + limits.headerTimeout().toMillis() + " ms"), limits.headerTimeout().toMillis(), TimeUnit.MILLISECONDS);
            } catch (java.util.concurrent.RejectedExecutionException shutDown) {
                close();
                return;
            }
            daemon(this::inbound, "graphlane-artery-guard-from-" + from.getHostAddress()).start();
        }

        /** Reads the client, checks, forwards; connects to Artery once the connection header passed. */
        private void inbound() {
            ByteBuffer buffer = ByteBuffer.allocateDirect(BUFFER_BYTES);
            try {
                client.setOption(StandardSocketOptions.TCP_NODELAY, true);
                client.setOption(StandardSocketOptions.SO_KEEPALIVE, true);
                while (true) {
                    int read = client.read(buffer);
                    if (read < 0) {
                        endInbound();
                        return;
                    }
                    buffer.flip();
                    int pass;
                    try {
                        pass = framing.scan(buffer);
                    } catch (ArteryFraming.Violation v) {
                        if (v.forwardable() > 0) {
                            if (upstream == null) {
                                connectUpstream();
                            }
                            forward(buffer, v.forwardable());
                        }
                        cut(v.getMessage());
                        return;
                    }
                    if (pass > 0 && upstream == null) {
                        connectUpstream();
                    }
                    forward(buffer, pass);
                    buffer.compact();
                }
            } catch (IOException e) {
                LOG.debug("Artery guard on {}: the connection from {} ended: {}", address(), from.getHostAddress(), e.toString());
                close();
            }
        }

        private void connectUpstream() throws IOException {
            ScheduledFuture<?> d = deadline;
            if (d != null) {
                d.cancel(false);
            }
            forwarded.incrementAndGet();
            SocketChannel ch = SocketChannel.open();
            try {
                ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
                ch.connect(artery);
            } catch (IOException e) {
                closeQuietly(ch);
                LOG.warn("Artery guard on {}: cannot reach Artery at {}: {}", address(), artery, e.toString());
                throw e;
            }
            upstream = ch;
            if (ended.get()) {
                closeQuietly(ch);
                throw new ClosedChannelException();
            }
            daemon(this::outbound, "graphlane-artery-guard-to-" + from.getHostAddress()).start();
        }

        private void forward(ByteBuffer buffer, int n) throws IOException {
            if (n == 0) {
                return;
            }
            int limit = buffer.limit();
            buffer.limit(buffer.position() + n);
            while (buffer.hasRemaining()) {
                upstream.write(buffer);
            }
            buffer.limit(limit);
        }

        /** Copies what Artery sends back (nothing, on Artery's inbound connections) until either side ends. */
        private void outbound() {
            ByteBuffer buffer = ByteBuffer.allocateDirect(4096);
            try {
                while (upstream.read(buffer) >= 0) {
                    buffer.flip();
                    while (buffer.hasRemaining()) {
                        client.write(buffer);
                    }
                    buffer.clear();
                }
            } catch (IOException e) {
                // the connection ended
            }
            close();
        }

        /** The client finished sending: Artery sees the same end, after whole frames only. */
        private void endInbound() {
            SocketChannel up = upstream;
            if (up == null) {
                close();
                return;
            }
            try {
                up.shutdownOutput();
            } catch (IOException e) {
                close();
            }
        }

        /** Refuses the connection: the client is closed, Artery sees a clean end after the last whole frame. */
        private void cut(String why) {
            if (ended.get()) {
                return;
            }
            refused(from, why);
            close();
        }

        void close() {
            if (!ended.compareAndSet(false, true)) {
                return;
            }
            ScheduledFuture<?> d = deadline;
            if (d != null) {
                d.cancel(false);
            }
            closeQuietly(client);
            SocketChannel up = upstream;
            if (up != null) {
                try {
                    up.shutdownOutput();
                } catch (IOException ignored) {
                    // already closed
                }
                closeQuietly(up);
            }
            release(from);
            open.remove(this);
        }
    }

    private static InetAddress remoteAddress(SocketChannel ch) {
        try {
            return ((InetSocketAddress) ch.getRemoteAddress()).getAddress();
        } catch (IOException | RuntimeException e) {
            return InetAddress.getLoopbackAddress();
        }
    }

    private static Thread daemon(Runnable body, String name) {
        Thread t = new Thread(body, name);
        t.setDaemon(true);
        return t;
    }

    private static void closeQuietly(java.io.Closeable c) {
        try {
            if (c != null) {
                c.close();
            }
        } catch (IOException ignored) {
            // nothing to do
        }
    }
}
