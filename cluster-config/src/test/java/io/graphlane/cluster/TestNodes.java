package io.graphlane.cluster;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalInt;
import java.util.function.BooleanSupplier;

/** Helpers for tests that run several nodes in one JVM on loopback. */
public final class TestNodes {
    static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

    private TestNodes() {
    }

    /** The base configuration of in-JVM nodes: several cluster MBeans in one JVM. */
    static Config base() {
        return ConfigFactory.parseString("""
                pekko.cluster.jmx.multi-mbeans-in-same-jvm = on
                pekko.loglevel = WARNING
                pekko.coordinated-shutdown.run-by-jvm-shutdown-hook = off
                """).withFallback(ConfigFactory.load());
    }

    /** {@code count} ports that were free a moment ago, below the ephemeral range ({@link TestPorts}). */
    static List<Integer> freePorts(int count) {
        return TestPorts.reserve(count);
    }

    /** Local-profile settings of {@code nodes} members on free ports, none with a given rank. */
    static List<NodeSettings> localCluster(int nodes) {
        List<Integer> artery = freePorts(nodes);
        List<Integer> management = freePorts(nodes);
        List<NodeSettings> all = new ArrayList<>();
        for (int i = 0; i < nodes; i++) {
            all.add(new NodeSettings(ClusterProfile.LOCAL, nodes, OptionalInt.empty(), "127.0.0.1", artery.get(i),
                    management.get(i), management, List.of(), false));
        }
        return all;
    }

    /** GET http://127.0.0.1:{port}{path}: the status and body. */
    static HttpResponse<String> get(int port, String path) {
        try {
            return HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                    .timeout(Duration.ofSeconds(5)).GET().build(), HttpResponse.BodyHandlers.ofString());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** Waits until {@code condition} holds, checking every 100 ms, or fails after {@code timeout}. */
    public static void awaitCondition(String what, Duration timeout, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out after " + timeout + " waiting for " + what);
            }
            Thread.sleep(100); // paces the polling of state outside this JVM's control (HTTP, membership); orders nothing
        }
    }
}
