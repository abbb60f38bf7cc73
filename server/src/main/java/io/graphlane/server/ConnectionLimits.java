package io.graphlane.server;

import java.time.Duration;
import java.util.Objects;

/**
 * What one HTTP port lets its clients hold: {@link LimitedBinding} enforces it on every connection, so that no client
 * (nor a crowd of idle or slow connections) can keep a health check from being answered.
 *
 * @param headerReadTimeout how long a connection may take to deliver a complete request head, counted from its opening
 *     and again from the end of each response; a connection that has not sent one by then (silent, trickling header
 *     lines, or idle between requests) is closed. Also the longest a kept-alive connection waits for its next request
 * @param idleTimeout how long a request body or a response body may stand still because of the client (it sends none of
 *     the body it announced, or reads none of the response being sent) before the connection is closed; the time the
 *     server itself takes to answer never counts
 * @param maxConnectionsPerClient the most connections one remote address may hold open at once; more are closed as soon
 *     as they are accepted. A proxy or load balancer in front is one address for all its clients: set this to at least
 *     the connections it keeps open (up to {@code maxConnections}, which turns the per-client cap off)
 * @param maxConnections the most connections the port holds open at once, from every client together; more are closed
 *     as soon as they are accepted, never queued
 */
public record ConnectionLimits(Duration headerReadTimeout, Duration idleTimeout, int maxConnectionsPerClient, int maxConnections) {
    /** Ten seconds: any real client sends its request head in one go. */
    public static final Duration DEFAULT_HEADER_READ_TIMEOUT = Duration.ofSeconds(10);
    /** One minute, Pekko HTTP's own idle timeout. */
    public static final Duration DEFAULT_IDLE_TIMEOUT = Duration.ofSeconds(60);
    /** 256: above the 64 + 256 generations a server holds is for a proxy to ask for; well below the total. */
    public static final int DEFAULT_MAX_CONNECTIONS_PER_CLIENT = 256;
    /** 1024, Pekko HTTP's own {@code max-connections}; but past it connections are closed, not left waiting. */
    public static final int DEFAULT_MAX_CONNECTIONS = 1024;

    public ConnectionLimits {
        Objects.requireNonNull(headerReadTimeout, "headerReadTimeout");
        Objects.requireNonNull(idleTimeout, "idleTimeout");
        if (headerReadTimeout.isNegative() || headerReadTimeout.isZero()) {
            throw new IllegalArgumentException("the header-read timeout must be positive, got " + headerReadTimeout.toMillis() + " ms");
        }
        if (idleTimeout.isNegative() || idleTimeout.isZero()) {
            throw new IllegalArgumentException("the idle timeout must be positive, got " + idleTimeout.toMillis() + " ms");
        }
        if (maxConnections < 1) {
            throw new IllegalArgumentException("the connection cap must be >= 1, got " + maxConnections);
        }
        if (maxConnectionsPerClient < 1 || maxConnectionsPerClient > maxConnections) {
            throw new IllegalArgumentException("the per-client connection cap must be in [1, " + maxConnections
                    + "] (the connection cap), got " + maxConnectionsPerClient);
        }
    }

    /** A 10 s header-read timeout, a 60 s idle timeout, 256 connections per client and 1024 in all. */
    public static ConnectionLimits defaults() {
        return new ConnectionLimits(DEFAULT_HEADER_READ_TIMEOUT, DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_CONNECTIONS_PER_CLIENT,
                DEFAULT_MAX_CONNECTIONS);
    }

    public ConnectionLimits withHeaderReadTimeout(Duration timeout) {
        return new ConnectionLimits(timeout, idleTimeout, maxConnectionsPerClient, maxConnections);
    }

    public ConnectionLimits withIdleTimeout(Duration timeout) {
        return new ConnectionLimits(headerReadTimeout, timeout, maxConnectionsPerClient, maxConnections);
    }

    /** {@code d} for a message: in whole seconds, or in milliseconds when it is not a whole number of seconds. */
    static String text(Duration d) {
        return d.toMillis() % 1000 == 0 ? d.toSeconds() + " s" : d.toMillis() + " ms";
    }

    /** These limits with at most {@code perClient} connections per remote address and {@code total} in all. */
    public ConnectionLimits withMaxConnections(int perClient, int total) {
        return new ConnectionLimits(headerReadTimeout, idleTimeout, perClient, total);
    }
}
