package io.graphlane.server;

import java.time.Duration;
import java.util.Objects;

/**
 * The limits of an {@link OpenAiServer}.
 *
 * @param maxBodyBytes the largest request body accepted; a larger one is answered 413
 * @param requestTimeout how long a non-streamed completion may take: its generations are given it as their deadline
 *     (answered 504 past it) and the HTTP layer answers 503 if no response was produced a few seconds later; a streamed
 *     completion sends its header at once and is not bounded by it
 */
public record ServerOptions(long maxBodyBytes, Duration requestTimeout) {
    /** 8 MiB, Pekko HTTP's own default. */
    public static final long DEFAULT_MAX_BODY_BYTES = 8L * 1024 * 1024;
    /** Five minutes. */
    public static final Duration DEFAULT_REQUEST_TIMEOUT = Duration.ofMinutes(5);

    public ServerOptions {
        Objects.requireNonNull(requestTimeout, "requestTimeout");
        if (maxBodyBytes < 1) {
            throw new IllegalArgumentException("the request body limit (--max-body-bytes) must be >= 1, got " + maxBodyBytes);
        }
        if (requestTimeout.isNegative() || requestTimeout.isZero()) {
            throw new IllegalArgumentException("the request timeout (--request-timeout-seconds) must be positive, got "
                    + requestTimeout.toSeconds() + " s");
        }
    }

    /** An 8 MiB body limit and a five-minute request timeout. */
    public static ServerOptions defaults() {
        return new ServerOptions(DEFAULT_MAX_BODY_BYTES, DEFAULT_REQUEST_TIMEOUT);
    }

    public ServerOptions withMaxBodyBytes(long bytes) {
        return new ServerOptions(bytes, requestTimeout);
    }

    public ServerOptions withRequestTimeout(Duration timeout) {
        return new ServerOptions(maxBodyBytes, timeout);
    }
}
