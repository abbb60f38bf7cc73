package io.graphlane.cli;

import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/** What the integration tests that start {@code graphlane.jar} as a server share: a free port, waiting for its health. */
final class ServedJar {
    private ServedJar() {
    }

    static int freePort() throws Exception {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    static HttpResponse<String> get(HttpClient http, String url) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(10)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    /** Polls {@code base}/health until it answers 200, the process ends, or 3 minutes pass; the last status (-1: not bound). */
    static int awaitHealth(HttpClient http, String base, Process process) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(3);
        int health = -1;
        while (health != 200 && System.nanoTime() - deadline < 0 && process.isAlive()) {
            try {
                health = get(http, base + "/health").statusCode();
            } catch (java.io.IOException notYetBound) {
                health = -1;
            }
            if (health != 200) {
                TimeUnit.MILLISECONDS.sleep(250); // paces the polling only
            }
        }
        return health;
    }
}
