package io.graphlane.cli.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.graphlane.backend.cpu.CpuBackend;
import io.graphlane.backend.cpu.CpuExecutor;
import io.graphlane.backend.cpu.collective.CollectiveKind;
import io.graphlane.backend.cpu.collective.CollectiveSettings;
import io.graphlane.backend.cpu.collective.CpuCollectiveGroup;
import io.graphlane.backend.cpu.collective.CpuCollectives;
import io.graphlane.backend.cpu.nn.CpuNeuralOps;
import io.graphlane.backend.cpu.nn.CpuTensor;
import io.graphlane.core.GraphlaneException;
import io.graphlane.core.backend.CollectiveBackend.Result;
import java.io.PrintWriter;
import java.nio.FloatBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.SynchronousQueue;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code graphlane bench collective}: one collective over N CPU lanes in this JVM, reported with the
 * nccl-tests definitions (size S: all-reduce and all-to-all the per-member buffer, all-gather the
 * gathered result; algbw = S / t; busbw = algbw × 2(n−1)/n for all-reduce, × (n−1)/n otherwise),
 * against a baseline measured in the same run: one thread copying the same S bytes out of a
 * buffer another thread handed it.
 *
 * <p>With {@code --nodes N} the group spans N JVMs on loopback, one rank each, over the cluster
 * transport ({@code io.graphlane.cluster.collective}: payload over a TCP socket per pair of ranks, or with
 * {@code --payload artery} as actor messages over Artery); the baseline is then a
 * plain socket copy of the same S bytes between two of those JVMs, measured in the same run, and the
 * collective's time is the median over runs of its slowest rank.
 */
@Command(name = "collective", mixinStandardHelpOptions = true,
        description = {"One collective over N CPU lanes in this JVM, or with --nodes over N node JVMs on loopback (median of the runs),",
            "with nccl-tests algbw and busbw, against a baseline measured in the same run: a copy of the same bytes between two",
            "threads (in this JVM) or a plain socket copy between two of the node JVMs (--nodes); ratio = busbw / baseline."})
public final class CollectiveBench implements Callable<Integer> {

    @Option(names = "--op", paramLabel = "OP", defaultValue = "all-reduce", description = "all-reduce (default), all-gather or all-to-all.")
    String op;

    @Option(names = "--mb", paramLabel = "MB", defaultValue = "16", description = "Size S in MiB (default ${DEFAULT-VALUE}).")
    int mb;

    @Option(names = "--members", paramLabel = "N", defaultValue = "2", description = "Members (lanes) of the group (default ${DEFAULT-VALUE}).")
    int members;

    @Option(names = "--nodes", paramLabel = "N", description = {"Run across N node JVMs started on loopback (free ports), one rank each,",
        "over the cluster transport; without it, --members lanes in this JVM."})
    Integer nodes;

    @Option(names = "--chunk-floats", paramLabel = "F", defaultValue = "262144",
            description = "Across nodes: floats per payload chunk (default ${DEFAULT-VALUE} = 1 MiB).")
    int chunkFloats;

    @Option(names = "--payload", paramLabel = "PLANE", defaultValue = "socket",
            description = {"Across nodes: where the payload travels, socket (a TCP connection per pair of ranks, the default)",
                "or artery (actor messages on Artery's large-message stream); graphlane.cluster.collective.payload."})
    String payload;

    @Option(names = "--shared-memory", paramLabel = "on|off", defaultValue = "on",
            description = {"Across nodes with --payload socket: ranks on one host move their payload through shared memory (on, the",
                "default) or their sockets' bytes (off); graphlane.cluster.collective.shared-memory."})
    String sharedMemory;

    @Option(names = "--tls", description = "Across nodes: Artery and the payload sockets over TLS, with a key store made for the run.")
    boolean tls;

    @Option(names = "--runs", paramLabel = "R", defaultValue = "15", description = "Timed runs after the warm-up; the median counts (default ${DEFAULT-VALUE}).")
    int runs;

    @Option(names = "--warmup-seconds", paramLabel = "W", defaultValue = "3",
            description = {"Untimed runs first, at least 2 and for at least W seconds, so the JIT has compiled the collective's",
                "paths before the timed runs (default ${DEFAULT-VALUE}; 0 = just 2, as a cold service would see)."})
    double warmupSeconds;

    @Option(names = "--json", description = "Print one JSON object.")
    boolean json;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    private final CpuNeuralOps ops = new CpuNeuralOps();

    @Override
    public Integer call() throws Exception {
        CollectiveKind kind = kindOf(op);
        if (mb < 1 || mb > 1024) {
            throw new GraphlaneException("--mb must be in [1, 1024], got " + mb);
        }
        if (nodes != null && (nodes < 2 || nodes > 16)) {
            throw new GraphlaneException("--nodes must be in [2, 16], got " + nodes);
        }
        if (members < 1 || members > 64) {
            throw new GraphlaneException("--members must be in [1, 64], got " + members);
        }
        if (runs < 1) {
            throw new GraphlaneException("--runs must be >= 1, got " + runs);
        }
        if (!(warmupSeconds >= 0 && warmupSeconds <= 600)) {
            throw new GraphlaneException("--warmup-seconds must be in [0, 600], got " + warmupSeconds);
        }
        if (!payload.equals("socket") && !payload.equals("artery")) {
            throw new GraphlaneException("--payload must be socket or artery, got '" + payload + "'");
        }
        if (!sharedMemory.equals("on") && !sharedMemory.equals("off")) {
            throw new GraphlaneException("--shared-memory must be on or off, got '" + sharedMemory + "'");
        }
        if (chunkFloats < 1024 || chunkFloats > (1 << 20)) {
            throw new GraphlaneException("--chunk-floats must be in [1024, 1048576], got " + chunkFloats);
        }
        int n = nodes != null ? nodes : members;
        long bytes = (long) mb << 20;
        int cols = 256;
        // Rows per member: S for all-reduce and all-to-all, S / n for all-gather; rounded to whole rows (and blocks for all-to-all).
        int totalRows = (int) (bytes / Float.BYTES / cols);
        int rows = switch (kind) {
            case ALL_GATHER -> totalRows / n;
            case ALL_TO_ALL -> totalRows / n * n;
            default -> totalRows;
        };
        long size = sizeBytes(kind, rows, cols, n);
        double factor = kind == CollectiveKind.ALL_REDUCE ? 2.0 * (n - 1) / n : (double) (n - 1) / n;
        PrintWriter out = spec.commandLine().getOut();
        if (nodes != null) {
            ClusterCollectiveBench.Result measured = new ClusterCollectiveBench(kind, nodes, rows, cols, runs, warmupSeconds, chunkFloats, payload,
                    spec.commandLine().getErr()).withTls(tls).withSharedMemory(sharedMemory.equals("on")).run();
            double seconds = measured.seconds();
            double algbw = size / seconds / 1e9;
            double busbw = algbw * factor;
            double tcp = size / measured.tcpSeconds() / 1e9;
            double ratio = busbw / tcp;
            if (json) {
                ObjectNode o = new ObjectMapper().createObjectNode();
                o.put("op", kind.label().replace('-', '_'));
                o.put("nodes", nodes);
                o.put("bytes", size);
                o.put("seconds", seconds);
                o.put("algbw_gb_per_s", algbw);
                o.put("busbw_gb_per_s", busbw);
                o.put("tcp_loopback_gb_per_s", tcp);
                o.put("ratio", ratio);
                o.put("transport", payload);
                o.put("tls", tls);
                o.put("shared_memory", measured.sharedMemory());
                o.put("runs", runs);
                o.put("warmup_runs", measured.warmupRuns());
                o.put("warmup_seconds", warmupSeconds);
                o.put("chunk_floats", chunkFloats);
                o.put("cores", Runtime.getRuntime().availableProcessors());
                ObjectNode phases = o.putObject("phase_ms_summed_over_ranks");
                for (int p = 0; p < ClusterCollectiveBench.PHASES.size(); p++) {
                    phases.put(ClusterCollectiveBench.PHASES.get(p), measured.phaseMillis()[p]);
                }
                out.println(o);
            } else {
                out.printf(Locale.ROOT, "%s over %d node JVMs on loopback (payload over %s%s%s), %d bytes: %.4f s, algbw %.3f GB/s, busbw %.3f GB/s%n",
                        kind, nodes, payload, measured.sharedMemory() ? " through shared memory" : "", tls ? ", TLS" : "", size, seconds, algbw, busbw);
                out.printf(Locale.ROOT, "baseline: plain socket copy of the same bytes between two of them %.3f GB/s; ratio busbw / tcp = %.2f%n",
                        tcp, ratio);
                double[] ms = measured.phaseMillis();
                out.printf(Locale.ROOT, "time per collective summed over the ranks' members: send %.2f ms, receive %.2f ms, reduce %.2f ms, wait %.2f ms%n",
                        ms[0], ms[1], ms[2], ms[3]);
            }
            out.flush();
            return 0;
        }
        double seconds = measureCollective(kind, rows, cols);
        double copySeconds = measureTwoThreadCopy((int) (size / Float.BYTES));
        double algbw = size / seconds / 1e9;
        double busbw = algbw * factor;
        double copy = size / copySeconds / 1e9;
        double ratio = busbw / copy;
        if (json) {
            ObjectNode o = new ObjectMapper().createObjectNode();
            o.put("op", kind.label().replace('-', '_'));
            o.put("members", members);
            o.put("transport", "in-process");
            o.put("bytes", size);
            o.put("seconds", seconds);
            o.put("algbw_gb_per_s", algbw);
            o.put("busbw_gb_per_s", busbw);
            o.put("memcpy_two_threads_gb_per_s", copy);
            o.put("runs", runs);
            o.put("warmup_seconds", warmupSeconds);
            o.put("ratio", ratio);
            o.put("cores", Runtime.getRuntime().availableProcessors());
            out.println(o);
        } else {
            out.printf(Locale.ROOT, "%s over %d in-process member(s), %d bytes: %.4f s, algbw %.2f GB/s, busbw %.2f GB/s%n",
                    kind, members, size, seconds, algbw, busbw);
            out.printf(Locale.ROOT, "baseline: copy of the same bytes between two threads %.2f GB/s; ratio busbw / copy = %.2f%n", copy, ratio);
        }
        out.flush();
        return 0;
    }

    /** The collective {@code --op} names. */
    static CollectiveKind kindOf(String op) {
        return switch (op) {
            case "all-reduce" -> CollectiveKind.ALL_REDUCE;
            case "all-gather" -> CollectiveKind.ALL_GATHER;
            case "all-to-all" -> CollectiveKind.ALL_TO_ALL;
            default -> throw new GraphlaneException("--op must be all-reduce, all-gather or all-to-all, got '" + op + "'");
        };
    }

    /** The size S of nccl-tests: the per-member buffer (all-reduce, all-to-all) or the gathered result (all-gather). */
    static long sizeBytes(CollectiveKind kind, int rows, int cols, int n) {
        return (long) (kind == CollectiveKind.ALL_GATHER ? rows * n : rows) * cols * Float.BYTES;
    }

    /** The median seconds of one collective on every member, from submitting the first to the last completion. */
    private double measureCollective(CollectiveKind kind, int rows, int cols) throws InterruptedException {
        try (CpuBackend backend = new CpuBackend("bench-collective")) {
            List<CpuExecutor> lanes = backend.forkExecutors(backend.rootExecutor(), members);
            CpuCollectiveGroup group = CpuCollectiveGroup.inProcess("bench", lanes, CollectiveSettings.defaults());
            CpuCollectives collectives = new CpuCollectives(backend);
            List<CpuTensor> inputs = new ArrayList<>();
            for (int m = 0; m < members; m++) {
                CpuTensor t = ops.allocate(rows, cols);
                FloatBuffer data = t.data();
                for (int i = 0; i < data.capacity(); i++) {
                    data.put(i, (m + 1) + (i & 1023));
                }
                inputs.add(t);
            }
            try {
                double[] times = new double[runs];
                long warmupEnd = System.nanoTime() + (long) (warmupSeconds * 1e9);
                int warm = 0;
                while (warm < 2 || System.nanoTime() < warmupEnd) {
                    warm++;
                    once(kind, collectives, group, lanes, inputs);
                }
                for (int run = 0; run < runs; run++) {
                    long start = System.nanoTime();
                    once(kind, collectives, group, lanes, inputs);
                    times[run] = (System.nanoTime() - start) / 1e9;
                }
                return median(times);
            } finally {
                inputs.forEach(ops::release);
            }
        }
    }

    /** One collective on every member, from submitting the first to the last completion; its results are freed. */
    private void once(CollectiveKind kind, CpuCollectives collectives, CpuCollectiveGroup group, List<CpuExecutor> lanes,
                      List<CpuTensor> inputs) throws InterruptedException {
        List<Result<CpuTensor>> results = new ArrayList<>();
        for (int m = 0; m < members; m++) {
            CpuTensor in = inputs.get(m);
            CpuExecutor lane = lanes.get(m);
            results.add(switch (kind) {
                case ALL_REDUCE -> collectives.allReduce(in, group, lane);
                case ALL_GATHER -> collectives.allGather(in, group, lane);
                case ALL_TO_ALL -> collectives.allToAll(in, group, lane);
            });
        }
        for (Result<CpuTensor> r : results) {
            r.completion().awaitSuccess();
        }
        results.forEach(r -> ops.release(r.value()));
    }

    /** The median seconds for a second thread to copy {@code floats} floats out of a buffer the first handed it. */
    private double measureTwoThreadCopy(int floats) throws InterruptedException {
        CpuTensor src = ops.allocate(1, floats);
        CpuTensor dst = ops.allocate(1, floats);
        SynchronousQueue<FloatBuffer> handOver = new SynchronousQueue<>();
        SynchronousQueue<Long> copied = new SynchronousQueue<>();
        Thread copier = new Thread(() -> {
            try {
                while (true) {
                    FloatBuffer from = handOver.take();
                    if (from.capacity() == 0) {
                        return;
                    }
                    dst.data().put(0, from, 0, floats);
                    copied.put(System.nanoTime());
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, "bench-copy");
        copier.start();
        try {
            FloatBuffer data = src.data();
            for (int i = 0; i < floats; i++) {
                data.put(i, i & 1023);
            }
            double[] times = new double[runs];
            for (int run = -2; run < runs; run++) {
                long start = System.nanoTime();
                handOver.put(data);
                long end = copied.take();
                if (run >= 0) {
                    times[run] = (end - start) / 1e9;
                }
            }
            return median(times);
        } finally {
            handOver.put(FloatBuffer.allocate(0));
            copier.join();
            ops.release(src);
            ops.release(dst);
        }
    }

    private static double median(double[] values) {
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        return sorted[sorted.length / 2];
    }
}
