package io.graphlane.cluster;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Ports for test nodes that must be known before any node binds (seed nodes, contact points). A port the kernel hands
 * out with {@code new ServerSocket(0)} comes from the ephemeral range, the same range every outgoing connection's local
 * port comes from: between closing the probe and the node's bind, any client on the host (another test's HTTP or
 * Artery connection, another build) may take it ("Address already in use"). These ports come from below the ephemeral
 * range, which the kernel never assigns on its own, and each was bindable on loopback when chosen.
 */
public final class TestPorts {
    private static final Path EPHEMERAL_RANGE = Path.of("/proc/sys/net/ipv4/ip_local_port_range");
    /** Linux's default start of the ephemeral range, where the file cannot be read. */
    private static final int DEFAULT_EPHEMERAL_LOW = 32768;
    private static final int LOWEST = 10_000;

    private TestPorts() {
    }

    /** {@code count} distinct ports below the ephemeral range, each bindable on 127.0.0.1 a moment ago. */
    public static synchronized List<Integer> reserve(int count) {
        int high = ephemeralLow();
        if (high - LOWEST < 1000) {
            throw new IllegalStateException("the ephemeral port range starts at " + high + "; tests need ports in [" + LOWEST + ", " + high + ")");
        }
        List<Integer> ports = new ArrayList<>();
        for (int tries = 0; ports.size() < count; tries++) {
            if (tries > 1000) {
                throw new IllegalStateException("found only " + ports.size() + " of " + count + " bindable ports in [" + LOWEST + ", " + high + ")");
            }
            int port = ThreadLocalRandom.current().nextInt(LOWEST, high);
            if (!ports.contains(port) && bindable(port)) {
                ports.add(port);
            }
        }
        return ports;
    }

    private static boolean bindable(int port) {
        try (ServerSocket socket = new ServerSocket()) {
            socket.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    private static int ephemeralLow() {
        try {
            // readAllLines, not readString: JDK 17's readString trusts the size /proc reports and returns a short read.
            String[] range = Files.readAllLines(EPHEMERAL_RANGE).get(0).trim().split("\\s+");
            return Integer.parseInt(range[0]);
        } catch (IOException | RuntimeException e) {
            return DEFAULT_EPHEMERAL_LOW;
        }
    }
}
