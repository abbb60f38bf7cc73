package io.graphlane.cli.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.graphlane.backend.cpu.collective.CollectiveKind;
import io.graphlane.backend.cpu.collective.CollectivePhases;
import io.graphlane.backend.cpu.collective.CollectiveSettings;
import io.graphlane.backend.cpu.collective.CpuCollectiveMember;
import io.graphlane.backend.cpu.collective.ReduceOp;
import io.graphlane.backend.cpu.nn.CpuNeuralOps;
import io.graphlane.backend.cpu.nn.CpuTensor;
import io.graphlane.cluster.ClusterProfile;
import io.graphlane.cluster.MembersUp;
import io.graphlane.cluster.NodeConfig;
import io.graphlane.cluster.NodeSettings;
import io.graphlane.cluster.collective.ClusterCollectiveTransport;
import io.graphlane.cluster.collective.ClusterCollectives;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.FloatBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.OptionalInt;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.Join;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * One rank of {@code bench collective --nodes N}, in its own JVM (started by {@link ClusterCollectiveBench}; hidden from
 * help). It talks to its parent through lines on stdin and stdout prefixed {@value #PREFIX}: it announces its Artery
 * port, reads the seed's, joins the cluster and the group {@code bench}, times the collective (each run behind a one-float
 * barrier) with its payload over {@code --payload} (socket or artery), and rank 0 then times a plain socket copy of
 * the same bytes to rank 1. It exits when its parent's stdin closes, so a parent that dies leaves no rank behind.
 */
@Command(name = "collective-worker", hidden = true, description = "One rank of bench collective --nodes (started by it).")
public final class CollectiveWorker implements Callable<Integer> {
    /** What every protocol line starts with; anything else a rank prints is passed on as a log line. */
    static final String PREFIX = "@@graphlane-bench ";

    @Option(names = "--rank", required = true)
    int rank;

    @Option(names = "--nodes", required = true)
    int nodes;

    @Option(names = "--op", required = true)
    String op;

    @Option(names = "--rows", required = true)
    int rows;

    @Option(names = "--cols", required = true)
    int cols;

    @Option(names = "--runs", required = true)
    int runs;

    @Option(names = "--warmup-seconds", defaultValue = "0")
    double warmupSeconds;

    /** Warm-up runs before the timed ones, as rank 0 decided for every rank. */
    private int warmupRuns;

    @Option(names = "--chunk-floats", required = true)
    int chunkFloats;

    @Option(names = "--payload", required = true)
    String payload;

    @Option(names = "--tls")
    boolean tls;

    @Option(names = "--shared-memory", required = true)
    String sharedMemory;

    private final CpuNeuralOps ops = new CpuNeuralOps();
    private final PrintStream out = System.out;

    @Override
    public Integer call() throws Exception {
        CollectiveKind kind = CollectiveBench.kindOf(op);
        BufferedReader parent = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        Config config = ConfigFactory.parseString("graphlane.cluster.collective.shared-memory = " + sharedMemory)
                .withFallback(config(payload, tls));
        ActorSystem<Void> system = ActorSystem.create(Behaviors.empty(), NodeConfig.systemName(config), config);
        try {
            tell("address " + Cluster.get(system).selfMember().address().getPort().get());
            String seed = parent.readLine();
            if (seed == null || !seed.startsWith("seed ")) {
                throw new IllegalStateException("rank " + rank + " expected 'seed PORT' from its parent, got " + seed);
            }
            watchParent(parent);
            var seedAddress = new org.apache.pekko.actor.Address("pekko", NodeConfig.systemName(config), "127.0.0.1",
                    Integer.parseInt(seed.substring(5).trim()));
            Cluster.get(system).manager().tell(Join.create(seedAddress));
            MembersUp.await(system, nodes, Duration.ofSeconds(60)).toCompletableFuture().get(70, TimeUnit.SECONDS);
            CollectiveSettings settings = new CollectiveSettings(Duration.ofSeconds(60), chunkFloats);
            ClusterCollectiveTransport transport = ClusterCollectives.join(system, "bench", rank, nodes, settings, Duration.ofSeconds(60))
                    .toCompletableFuture().get(90, TimeUnit.SECONDS);
            CpuCollectiveMember member = CpuCollectiveMember.over("bench", rank, transport, settings);
            ObjectNode result = new ObjectMapper().createObjectNode();
            result.put("rank", rank);
            result.put("shared_memory_links", transport.sharedMemoryPeers().size());
            ArrayNode times = result.putArray("seconds");
            CollectivePhases phases = measureCollective(member, kind, times);
            result.put("warmup_runs", warmupRuns);
            ObjectNode perRun = result.putObject("phase_ms");
            perRun.put("send", phases.sendNanos() / 1e6 / runs);
            perRun.put("receive", phases.receiveNanos() / 1e6 / runs);
            perRun.put("reduce", phases.reduceNanos() / 1e6 / runs);
            perRun.put("wait", phases.waitNanos() / 1e6 / runs);
            ArrayNode tcp = result.putArray("tcp_seconds");
            measureSocketCopy(member, tcp);
            barrier(member, 0);
            tell("result " + result);
            transport.close();
            return 0;
        } finally {
            system.terminate();
            system.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
        }
    }

    private static Config config(String payload, boolean tls) {
        Config base = ConfigFactory.parseString("graphlane.cluster.collective.payload = " + payload + "\n" + """
                pekko.loglevel = WARNING
                pekko.coordinated-shutdown.run-by-jvm-shutdown-hook = off
                pekko.cluster.typed.receptionist.distributed-data.gossip-interval = 100ms
                pekko.cluster.typed.receptionist.distributed-data.notify-subscribers-interval = 50ms
                """).withFallback(ConfigFactory.load());
        NodeSettings settings = new NodeSettings(ClusterProfile.STATIC, 1, OptionalInt.empty(), "127.0.0.1", 0, 0, List.of(),
                List.of("127.0.0.1:1"), tls);
        return ConfigFactory.parseString("pekko.cluster.seed-nodes = []").withFallback(NodeConfig.build(settings, base));
    }

    private void tell(String line) {
        synchronized (out) {
            out.println(PREFIX + line);
            out.flush();
        }
    }

    /** Exits this JVM at once when the parent's end of stdin closes: a parent that died leaves no rank running. */
    private static void watchParent(BufferedReader parent) {
        Thread watcher = new Thread(() -> {
            try {
                while (parent.readLine() != null) {
                    // Nothing more is expected from the parent.
                }
            } catch (IOException ignored) {
                // Treated as closed.
            }
            Runtime.getRuntime().halt(3);
        }, "bench-parent-watch");
        watcher.setDaemon(true);
        watcher.start();
    }


    /** A one-float all-reduce: every rank has arrived once it returns. Returns the sum of {@code value} over the ranks. */
    private float barrier(CpuCollectiveMember member, float value) {
        CpuTensor one = ops.fromHost(new float[] {value}, 1, 1);
        try {
            member.allReduceInPlace(one, ReduceOp.SUM);
            return one.data().get(0);
        } finally {
            ops.release(one);
        }
    }

    /** Times the runs into {@code times}; returns where the member spent the timed runs, summed over them. */
    private CollectivePhases measureCollective(CpuCollectiveMember member, CollectiveKind kind, ArrayNode times) {
        CpuTensor input = ops.allocate(rows, cols);
        FloatBuffer data = input.data();
        for (int i = 0; i < data.capacity(); i++) {
            data.put(i, (rank + 1) + (i & 1023));
        }
        int[] counts = new int[nodes];
        for (int j = 0; j < nodes; j++) {
            counts[j] = rows / nodes;
        }
        CollectivePhases spent = new CollectivePhases(0, 0, 0, 0);
        try {
            // Warm-up until the JIT has compiled the collective's paths: at least 2 runs and --warmup-seconds; rank 0
            // decides for everyone (every rank must run the same collectives), its vote travelling in the barrier.
            long warmupEnd = System.nanoTime() + (long) (warmupSeconds * 1e9);
            while (barrier(member, rank == 0 && (warmupRuns < 2 || System.nanoTime() < warmupEnd) ? 1 : 0) > 0) {
                CpuTensor made = once(member, kind, input, counts);
                if (made != null) {
                    ops.release(made);
                }
                warmupRuns++;
            }
            for (int run = 0; run < runs; run++) {
                barrier(member, 0);
                CollectivePhases before = member.phases();
                long start = System.nanoTime();
                CpuTensor made = once(member, kind, input, counts);
                long end = System.nanoTime();
                CollectivePhases during = member.phases().minus(before);
                if (made != null) {
                    ops.release(made);
                }
                times.add((end - start) / 1e9);
                spent = spent.plus(during);
            }
        } finally {
            ops.release(input);
        }
        return spent;
    }

    /** One collective of {@code kind}; returns the tensor it made (null for the in-place all-reduce). */
    private static CpuTensor once(CpuCollectiveMember member, CollectiveKind kind, CpuTensor input, int[] counts) {
        return switch (kind) {
            case ALL_REDUCE -> {
                member.allReduceInPlace(input, ReduceOp.SUM);
                yield null;
            }
            case ALL_GATHER -> member.allGather(input);
            case ALL_TO_ALL -> member.allToAll(input, counts);
        };
    }

    /**
     * The baseline: rank 1 listens on a loopback port (shared through the group), rank 0 writes the collective's bytes to
     * it over a plain socket and stops its clock when rank 1 acknowledges having read them all; the same runs.
     */
    private void measureSocketCopy(CpuCollectiveMember member, ArrayNode times) throws IOException {
        long bytes = CollectiveBench.sizeBytes(CollectiveBench.kindOf(op), rows, cols, nodes);
        ServerSocketChannel server = null;
        if (rank == 1) {
            server = ServerSocketChannel.open();
            server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
        }
        int port = (int) barrier(member, server == null ? 0 : ((InetSocketAddress) server.getLocalAddress()).getPort());
        if (rank == 1) {
            try (ServerSocketChannel s = server; SocketChannel in = s.accept()) {
                ByteBuffer buffer = ByteBuffer.allocateDirect(1 << 20);
                ByteBuffer ack = ByteBuffer.allocate(1);
                for (int run = -warmupRuns; run < runs; run++) {
                    long left = bytes;
                    while (left > 0) {
                        buffer.clear();
                        buffer.limit((int) Math.min(buffer.capacity(), left));
                        int n = in.read(buffer);
                        if (n < 0) {
                            throw new IOException("the socket baseline's sender closed early");
                        }
                        left -= n;
                    }
                    ack.clear();
                    in.write(ack);
                }
            }
        } else if (rank == 0) {
            try (SocketChannel to = SocketChannel.open(new InetSocketAddress(InetAddress.getLoopbackAddress(), port))) {
                ByteBuffer source = ByteBuffer.allocateDirect((int) Math.min(bytes, 1 << 30));
                ByteBuffer ack = ByteBuffer.allocate(1);
                for (int run = -warmupRuns; run < runs; run++) {
                    long start = System.nanoTime();
                    long left = bytes;
                    while (left > 0) {
                        source.clear();
                        source.limit((int) Math.min(source.capacity(), left));
                        while (source.hasRemaining()) {
                            left -= to.write(source);
                        }
                    }
                    ack.clear();
                    if (to.read(ack) < 0) {
                        throw new IOException("the socket baseline's receiver closed early");
                    }
                    long end = System.nanoTime();
                    if (run >= 0) {
                        times.add((end - start) / 1e9);
                    }
                }
            }
        }
    }
}
