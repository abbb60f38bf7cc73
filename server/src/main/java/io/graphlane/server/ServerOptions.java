package io.graphlane.server;

import java.time.Duration;
import java.util.Objects;

/**
 * The limits of an {@link OpenAiServer}.
 *
 * @param maxBodyBytes the largest request body accepted; a larger one is answered 413
 * @param requestTimeout how long a non-streamed completion may take: its generations are given it as their deadline
 *     (answered 504 past it) and the HTTP layer answers 503 if no response was produced 5 s later; a streamed completion
 *     sends its header at once and is not bounded by it
 * @param connections what each client, and all of them together, may hold of the port {@link OpenAiServer#bind} binds
 */
public record ServerOptions(long maxBodyBytes, Duration requestTimeout, ConnectionLimits connections) {
    /** 8 MiB, Pekko HTTP's own default. */
    public static final long DEFAULT_MAX_BODY_BYTES = 8L * 1024 * 1024;
    /** Five minutes. */
    public static final Duration DEFAULT_REQUEST_TIMEOUT = Duration.ofMinutes(5);

    public ServerOptions {
        Objects.requireNonNull(requestTimeout, "requestTimeout");
        Objects.requireNonNull(connections, "connections");
        if (maxBodyBytes < 1) {
            throw new IllegalArgumentException("the request body limit (--max-body-bytes) must be >= 1, got " + maxBodyBytes);
        }
        if (requestTimeout.isNegative() || requestTimeout.isZero()) {
            throw new IllegalArgumentException("the request timeout (--request-timeout-seconds) must be positive, got "
                    + requestTimeout.toSeconds() + " s");
        }
    }

    /** These limits with {@link ConnectionLimits#defaults()}. */
    public ServerOptions(long maxBodyBytes, Duration requestTimeout) {
        this(maxBodyBytes, requestTimeout, ConnectionLimits.defaults());
    }

    /** An 8 MiB body limit, a five-minute request timeout and {@link ConnectionLimits#defaults()}. */
    public static ServerOptions defaults() {
        return new ServerOptions(DEFAULT_MAX_BODY_BYTES, DEFAULT_REQUEST_TIMEOUT);
    }

    public ServerOptions withMaxBodyBytes(long bytes) {
        return new ServerOptions(bytes, requestTimeout, connections);
    }

    public ServerOptions withRequestTimeout(Duration timeout) {
        return new ServerOptions(maxBodyBytes, timeout, connections);
    }

    public ServerOptions withConnectionLimits(ConnectionLimits limits) {
        return new ServerOptions(maxBodyBytes, requestTimeout, limits);
    }
}
