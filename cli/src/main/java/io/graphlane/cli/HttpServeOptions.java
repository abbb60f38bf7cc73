package io.graphlane.cli;

import io.graphlane.core.GraphlaneException;
import io.graphlane.server.ConnectionLimits;
import io.graphlane.server.ServerOptions;
import java.time.Duration;
import picocli.CommandLine.Option;

/**
 * The options of the OpenAI server that {@code serve} and {@code node --serve} share: its limits, its port's connection
 * limits ({@link ConnectionLimits}) and its drain.
 */
public final class HttpServeOptions {

    @Option(names = "--max-body-bytes", paramLabel = "BYTES", defaultValue = "" + ServerOptions.DEFAULT_MAX_BODY_BYTES,
            description = "The largest request body accepted; a larger one is answered 413 (default ${DEFAULT-VALUE}).")
    long maxBodyBytes = ServerOptions.DEFAULT_MAX_BODY_BYTES;

    @Option(names = "--request-timeout-seconds", paramLabel = "S", defaultValue = "300",
            description = "How long a non-streamed completion may generate before it is answered 504; streamed ones are not"
                    + " bounded (default ${DEFAULT-VALUE}).")
    long requestTimeoutSeconds = 300;

    @Option(names = "--header-read-timeout-seconds", paramLabel = "S", defaultValue = "10",
            description = "How long a connection may take to send a complete request head, from its opening and again after"
                    + " each response (so also how long a kept-alive connection may wait for its next request); a connection"
                    + " that has not sent one is closed (default ${DEFAULT-VALUE}).")
    long headerReadTimeoutSeconds = 10;

    @Option(names = "--idle-timeout-seconds", paramLabel = "S", defaultValue = "60",
            description = "How long a request or response body may stand still because of the client (it sends none of"
                    + " its body, or reads none of the response) before the connection is closed; the server's own time"
                    + " to answer never counts (default ${DEFAULT-VALUE}).")
    long idleTimeoutSeconds = 60;

    @Option(names = "--max-connections-per-client", paramLabel = "N", defaultValue = "" + ConnectionLimits.DEFAULT_MAX_CONNECTIONS_PER_CLIENT,
            description = "The most connections one client address may hold open; more are closed at once. A proxy or load"
                    + " balancer in front is one address for all its clients: raise this to its connection pool size, or to"
                    + " --max-connections to turn the per-client cap off (default ${DEFAULT-VALUE}).")
    int maxConnectionsPerClient = ConnectionLimits.DEFAULT_MAX_CONNECTIONS_PER_CLIENT;

    @Option(names = "--max-connections", paramLabel = "N", defaultValue = "" + ConnectionLimits.DEFAULT_MAX_CONNECTIONS,
            description = "The most connections the port holds open, from all clients; more are closed at once, never"
                    + " queued (default ${DEFAULT-VALUE}).")
    int maxConnections = ConnectionLimits.DEFAULT_MAX_CONNECTIONS;

    @Option(names = "--drain-seconds", paramLabel = "S", defaultValue = "30",
            description = "On SIGTERM, how long requests in flight may take to finish (new ones get 503 meanwhile) before the"
                    + " server stops anyway (default ${DEFAULT-VALUE}).")
    long drainSeconds = 30;

    /** The server's limits. */
    ServerOptions serverOptions() {
        if (maxBodyBytes < 1) {
            throw new GraphlaneException("--max-body-bytes must be >= 1, got " + maxBodyBytes);
        }
        if (requestTimeoutSeconds < 1) {
            throw new GraphlaneException("--request-timeout-seconds must be >= 1, got " + requestTimeoutSeconds);
        }
        return new ServerOptions(maxBodyBytes, Duration.ofSeconds(requestTimeoutSeconds), connectionLimits());
    }

    /** The connection limits of the server's port. */
    ConnectionLimits connectionLimits() {
        if (headerReadTimeoutSeconds < 1) {
            throw new GraphlaneException("--header-read-timeout-seconds must be >= 1, got " + headerReadTimeoutSeconds);
        }
        if (idleTimeoutSeconds < 1) {
            throw new GraphlaneException("--idle-timeout-seconds must be >= 1, got " + idleTimeoutSeconds);
        }
        if (maxConnections < 1) {
            throw new GraphlaneException("--max-connections must be >= 1, got " + maxConnections);
        }
        if (maxConnectionsPerClient < 1 || maxConnectionsPerClient > maxConnections) {
            throw new GraphlaneException("--max-connections-per-client must be in [1, " + maxConnections + "] (--max-connections), got "
                    + maxConnectionsPerClient);
        }
        return new ConnectionLimits(Duration.ofSeconds(headerReadTimeoutSeconds), Duration.ofSeconds(idleTimeoutSeconds),
                maxConnectionsPerClient, maxConnections);
    }

    /** How long the drain may take. */
    Duration drainGrace() {
        if (drainSeconds < 0) {
            throw new GraphlaneException("--drain-seconds must be >= 0, got " + drainSeconds);
        }
        return Duration.ofSeconds(drainSeconds);
    }
}
