package io.graphlane.cluster.collective;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import com.typesafe.config.Config;
import io.graphlane.backend.cpu.collective.CollectiveSettings;
import io.graphlane.backend.cpu.collective.CpuCollectiveMember;
import io.graphlane.backend.cpu.collective.ReduceOp;
import io.graphlane.backend.cpu.nn.CpuNeuralOps;
import io.graphlane.backend.cpu.nn.CpuTensor;
import io.graphlane.cluster.MembersUp;
import io.graphlane.cluster.TestKeyStores;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.typed.ActorSystem;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Groups of three ranks on three nodes forming their payload sockets: over Artery TLS the sockets run TLS with the
 * cluster's certificate (a plain connection presenting the right handshake is refused) and an all-reduce sums
 * exactly; and with 20 silent and 20 garbage connections waiting on a rank's payload port (and garbage sent to every
 * node's Artery port) the group still forms within its join timeout, which serving those connections one at a time,
 * each up to its 10 s deadline, would take 20 times over.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class PayloadPlaneFormationTest {
    private static final CpuNeuralOps OPS = new CpuNeuralOps();
    private static final Duration JOIN_TIMEOUT = Duration.ofSeconds(20);

    @Test
    void aGroupOverArteryTlsRunsItsPayloadSocketsOverTlsAndSumsExactly(@TempDir Path dir) throws Exception {
        Path keyStore = TestKeyStores.selfSigned(dir.resolve("cluster.p12"), "graphlane-cluster");
        Config tls = TestKeyStores.configSslEngine(keyStore, keyStore).atPath("pekko.remote.artery.ssl.config-ssl-engine")
                .withFallback(com.typesafe.config.ConfigFactory.parseString("pekko.remote.artery.transport = tls-tcp"));
        List<ActorSystem<Void>> nodes = CollectiveNodes.cluster(3, "socket", tls);
        try {
            CompletableFuture<SocketPayloadPlane> top = new CompletableFuture<>();
            List<CompletableFuture<ClusterCollectiveTransport>> joining = new ArrayList<>();
            joining.add(join(nodes, "tls-sum", 2, top));
            SocketPayloadPlane plane = top.get(10, TimeUnit.SECONDS);
            // Rank 1's handshake in plain TCP, with the right nonce: refused before it is read, since the socket runs TLS.
            try (SocketChannel plain = SocketChannel.open(new InetSocketAddress(plane.host(), plane.port()))) {
                byte[] g = "tls-sum".getBytes(StandardCharsets.UTF_8);
                ByteBuffer hs = ByteBuffer.allocate(4 + 1 + 4 + g.length + 16);
                hs.putInt(0x474C5043).put((byte) 1).putInt(g.length).put(g).putInt(1).putInt(2).putLong(plane.nonce()).flip();
                plain.write(hs);
                ByteBuffer answer = ByteBuffer.allocate(64);
                int read = plain.read(answer);
                assertFalse(read == 1 && answer.get(0) == 1, "a plain handshake is never accepted");
            }
            joining.add(0, join(nodes, "tls-sum", 0, new CompletableFuture<>()));
            joining.add(1, join(nodes, "tls-sum", 1, new CompletableFuture<>()));
            allReduceSumsExactly("tls-sum", joined(joining));
        } finally {
            CollectiveNodes.terminate(nodes);
        }
    }

    @Test
    void silentAndGarbageConnectionsNeitherDelayFormationNorStopTheNode() throws Exception {
        List<ActorSystem<Void>> nodes = CollectiveNodes.cluster(3, "socket");
        List<Socket> strays = new ArrayList<>();
        try {
            Random random = new Random(13);
            // Artery's own port: garbage and a silent connection to every node, before the group greets over Artery.
            for (ActorSystem<Void> node : nodes) {
                strays.add(garbage(node.address().getHost().get(), (Integer) node.address().getPort().get(), random));
                strays.add(new Socket(node.address().getHost().get(), (Integer) node.address().getPort().get()));
            }
            CompletableFuture<SocketPayloadPlane> top = new CompletableFuture<>();
            List<CompletableFuture<ClusterCollectiveTransport>> joining = new ArrayList<>();
            joining.add(join(nodes, "strays", 2, top));
            SocketPayloadPlane plane = top.get(10, TimeUnit.SECONDS);
            List<Socket> silent = new ArrayList<>();
            for (int i = 0; i < 20; i++) {
                Socket s = new Socket(plane.host(), plane.port());
                silent.add(s);
                strays.add(s);
                strays.add(garbage(plane.host(), plane.port(), random));
            }
            // Ranks 0 and 1 connect behind the 40 strays in rank 2's accept queue.
            joining.add(0, join(nodes, "strays", 0, new CompletableFuture<>()));
            joining.add(1, join(nodes, "strays", 1, new CompletableFuture<>()));
            allReduceSumsExactly("strays", joined(joining));
            // Each silent connection is closed at its own deadline, and the nodes are still members of their cluster.
            for (Socket s : silent) {
                s.setSoTimeout((int) (SocketPayloadPlane.HANDSHAKE_TIMEOUT_MS * 3));
                assertEquals(-1, readAll(s.getInputStream()), "a silent connection ends at its deadline");
            }
            for (ActorSystem<Void> node : nodes) {
                MembersUp.await(node, 3, Duration.ofSeconds(10)).toCompletableFuture().get(20, TimeUnit.SECONDS);
            }
        } finally {
            for (Socket s : strays) {
                s.close();
            }
            CollectiveNodes.terminate(nodes);
        }
    }

    /** A connection that sends 4 KiB of random bytes and stays open. */
    private static Socket garbage(String host, int port, Random random) throws IOException {
        Socket s = new Socket(host, port);
        byte[] bytes = new byte[4096];
        random.nextBytes(bytes);
        s.getOutputStream().write(bytes);
        s.getOutputStream().flush();
        return s;
    }

    /** Reads until the end of the stream; -1 then. */
    private static int readAll(InputStream in) throws IOException {
        byte[] buffer = new byte[256];
        while (in.read(buffer) >= 0) {
            // A refusal byte may come first.
        }
        return -1;
    }

    private static CompletableFuture<ClusterCollectiveTransport> join(List<ActorSystem<Void>> nodes, String group, int rank,
                                                                      CompletableFuture<SocketPayloadPlane> opened) {
        return ClusterCollectives.join(nodes.get(rank), group, rank, 3, CollectiveSettings.defaults(), JOIN_TIMEOUT, opened::complete)
                .toCompletableFuture();
    }

    private static List<ClusterCollectiveTransport> joined(List<CompletableFuture<ClusterCollectiveTransport>> joining) throws Exception {
        List<ClusterCollectiveTransport> transports = new ArrayList<>();
        for (CompletableFuture<ClusterCollectiveTransport> j : joining) {
            transports.add(j.get(JOIN_TIMEOUT.toSeconds() + 10, TimeUnit.SECONDS));
        }
        return transports;
    }

    /** Rank r holds (r + 1) * (i % 101) at i of a 300 x 1001 tensor; every rank ends with 6 * (i % 101). */
    private static void allReduceSumsExactly(String group, List<ClusterCollectiveTransport> transports) throws Exception {
        int rows = 300;
        int cols = 1001;
        List<CompletableFuture<float[]>> sums = new ArrayList<>();
        for (ClusterCollectiveTransport t : transports) {
            CpuCollectiveMember member = CpuCollectiveMember.over(group, t.localRank(), t, CollectiveSettings.defaults());
            sums.add(CompletableFuture.supplyAsync(() -> {
                float[] values = new float[rows * cols];
                for (int i = 0; i < values.length; i++) {
                    values[i] = (t.localRank() + 1) * (i % 101);
                }
                CpuTensor tensor = OPS.fromHost(values, rows, cols);
                try {
                    member.allReduceInPlace(tensor, ReduceOp.SUM);
                    OPS.toHost(tensor, values);
                    return values;
                } finally {
                    OPS.release(tensor);
                }
            }, r -> new Thread(r, group + "-rank-" + t.localRank()).start()));
        }
        float[] expected = new float[rows * cols];
        for (int i = 0; i < expected.length; i++) {
            expected[i] = 6 * (i % 101);
        }
        for (int r = 0; r < 3; r++) {
            assertArrayEquals(expected, sums.get(r).get(60, TimeUnit.SECONDS), "rank " + r);
        }
        CollectiveNodes.closeAll(transports);
    }
}
