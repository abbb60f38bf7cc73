package io.graphlane.server;

import java.net.InetAddress;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The connections one port holds open, in all and per remote address, against its {@link ConnectionLimits}. Each
 * connection takes a slot when it is accepted ({@link #tryOpen}) and gives it back once when it ends. Thread-safe:
 * connections are accepted and end on any thread.
 */
final class ConnectionCounts {
    private static final Logger LOG = LoggerFactory.getLogger(ConnectionCounts.class);
    /** At most one warning about refused connections per this many nanoseconds. */
    private static final long WARN_INTERVAL_NANOS = 10_000_000_000L;

    /** Why a connection was refused. */
    enum Refusal {
        /** Its client already holds {@code maxConnectionsPerClient}. */
        CLIENT_CAP,
        /** The port already holds {@code maxConnections}. */
        TOTAL_CAP
    }

    private final String port;
    private final ConnectionLimits limits;
    private final ConcurrentHashMap<InetAddress, Integer> perClient = new ConcurrentHashMap<>();
    private final AtomicInteger total = new AtomicInteger();
    private final AtomicInteger refusedSinceWarning = new AtomicInteger();
    private final AtomicLong lastWarning = new AtomicLong(System.nanoTime() - WARN_INTERVAL_NANOS);

    /** Counts for the port named {@code port} (in log lines) under {@code limits}. */
    ConnectionCounts(String port, ConnectionLimits limits) {
        this.port = port;
        this.limits = limits;
    }

    /** Takes a slot for a connection from {@code client}: null when taken, else why it is refused. */
    Refusal tryOpen(InetAddress client) {
        if (total.incrementAndGet() > limits.maxConnections()) {
            total.decrementAndGet();
            return refused(Refusal.TOTAL_CAP, client);
        }
        boolean[] taken = {false};
        perClient.compute(client, (address, open) -> {
            int now = open == null ? 0 : open;
            if (now >= limits.maxConnectionsPerClient()) {
                return open;
            }
            taken[0] = true;
            return now + 1;
        });
        if (!taken[0]) {
            total.decrementAndGet();
            return refused(Refusal.CLIENT_CAP, client);
        }
        return null;
    }

    /** Gives back the slot of a connection from {@code client} that {@link #tryOpen} took. */
    void closed(InetAddress client) {
        perClient.computeIfPresent(client, (address, open) -> open <= 1 ? null : open - 1);
        total.decrementAndGet();
    }

    /** Logs a refusal, at most once per interval (a flood must not flood the log too), with the count since the last. */
    private Refusal refused(Refusal why, InetAddress client) {
        int refused = refusedSinceWarning.incrementAndGet();
        long now = System.nanoTime();
        long last = lastWarning.get();
        if (now - last >= WARN_INTERVAL_NANOS && lastWarning.compareAndSet(last, now)) {
            refusedSinceWarning.addAndGet(-refused);
            LOG.warn("{}: closed {} connection(s) at once in the last {} s; the last from {}: {}", port, refused,
                    WARN_INTERVAL_NANOS / 1_000_000_000L, client.getHostAddress(), why == Refusal.CLIENT_CAP
                            ? "it already holds " + limits.maxConnectionsPerClient() + " connections (the per-client cap)"
                            : "the port already holds " + limits.maxConnections() + " connections (the connection cap)");
        }
        return why;
    }
}
