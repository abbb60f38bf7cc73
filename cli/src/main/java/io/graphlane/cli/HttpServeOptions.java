package io.graphlane.cli;

import io.graphlane.core.GraphlaneException;
import io.graphlane.server.ServerOptions;
import java.time.Duration;
import picocli.CommandLine.Option;

/** The options of the OpenAI server that {@code serve} and {@code node --serve} share: its limits and its drain. */
public final class HttpServeOptions {

    @Option(names = "--max-body-bytes", paramLabel = "BYTES", defaultValue = "" + ServerOptions.DEFAULT_MAX_BODY_BYTES,
            description = "The largest request body accepted; a larger one is answered 413 (default ${DEFAULT-VALUE}).")
    long maxBodyBytes = ServerOptions.DEFAULT_MAX_BODY_BYTES;

    @Option(names = "--request-timeout-seconds", paramLabel = "S", defaultValue = "300",
            description = "How long a non-streamed completion may generate before it is answered 504; streamed ones are not"
                    + " bounded (default ${DEFAULT-VALUE}).")
    long requestTimeoutSeconds = 300;

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
        return new ServerOptions(maxBodyBytes, Duration.ofSeconds(requestTimeoutSeconds));
    }

    /** How long the drain may take. */
    Duration drainGrace() {
        if (drainSeconds < 0) {
            throw new GraphlaneException("--drain-seconds must be >= 0, got " + drainSeconds);
        }
        return Duration.ofSeconds(drainSeconds);
    }
}
