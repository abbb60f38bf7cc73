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
 * buffer another thread handed it. The cross-node version needs the cluster transport and is not
 * measured here.
 */
@Command(name = "collective", mixinStandardHelpOptions = true,
        description = {"One collective over N CPU lanes in this JVM (median of the runs), with nccl-tests algbw and busbw,",
            "against a plain copy of the same bytes between two threads measured in the same run; ratio = busbw / copy."})
public final class CollectiveBench implements Callable<Integer> {

    @Option(names = "--op", paramLabel = "OP", defaultValue = "all-reduce", description = "all-reduce (default), all-gather or all-to-all.")
    String op;

    @Option(names = "--mb", paramLabel = "MB", defaultValue = "16", description = "Size S in MiB (default ${DEFAULT-VALUE}).")
    int mb;

    @Option(names = "--members", paramLabel = "N", defaultValue = "2", description = "Members (lanes) of the group (default ${DEFAULT-VALUE}).")
    int members;

    @Option(names = "--runs", paramLabel = "R", defaultValue = "7", description = "Measured runs after 2 warm-up runs; the median counts (default ${DEFAULT-VALUE}).")
    int runs;

    @Option(names = "--json", description = "Print one JSON object.")
    boolean json;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    private final CpuNeuralOps ops = new CpuNeuralOps();

    @Override
    public Integer call() throws Exception {
        CollectiveKind kind = switch (op) {
            case "all-reduce" -> CollectiveKind.ALL_REDUCE;
            case "all-gather" -> CollectiveKind.ALL_GATHER;
            case "all-to-all" -> CollectiveKind.ALL_TO_ALL;
            default -> throw new GraphlaneException("--op must be all-reduce, all-gather or all-to-all, got '" + op + "'");
        };
        if (mb < 1 || mb > 1024) {
            throw new GraphlaneException("--mb must be in [1, 1024], got " + mb);
        }
        if (members < 1 || members > 64) {
            throw new GraphlaneException("--members must be in [1, 64], got " + members);
        }
        if (runs < 1) {
            throw new GraphlaneException("--runs must be >= 1, got " + runs);
        }
        long bytes = (long) mb << 20;
        int cols = 256;
        // Rows per member: S for all-reduce and all-to-all, S / n for all-gather; rounded to whole rows (and blocks for all-to-all).
        int totalRows = (int) (bytes / Float.BYTES / cols);
        int rows = switch (kind) {
            case ALL_GATHER -> totalRows / members;
            case ALL_TO_ALL -> totalRows / members * members;
            default -> totalRows;
        };
        long size = (long) (kind == CollectiveKind.ALL_GATHER ? rows * members : rows) * cols * Float.BYTES;
        double seconds = measureCollective(kind, rows, cols);
        double copySeconds = measureTwoThreadCopy((int) (size / Float.BYTES));
        double algbw = size / seconds / 1e9;
        double factor = kind == CollectiveKind.ALL_REDUCE ? 2.0 * (members - 1) / members : (double) (members - 1) / members;
        double busbw = algbw * factor;
        double copy = size / copySeconds / 1e9;
        double ratio = busbw / copy;
        PrintWriter out = spec.commandLine().getOut();
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
            o.put("ratio", ratio);
            o.put("cores", Runtime.getRuntime().availableProcessors());
            out.println(o);
        } else {
            out.printf(Locale.ROOT, "%s over %d in-process member(s), %d bytes: %.4f s, algbw %.2f GB/s, busbw %.2f GB/s%n",
                    kind, members, size, seconds, algbw, busbw);
            out.printf(Locale.ROOT, "baseline: copy of the same bytes between two threads %.2f GB/s; ratio busbw / copy = %.2f%n", copy, ratio);
            out.println("(across nodes the collectives need the cluster transport: not measured by this command)");
        }
        out.flush();
        return 0;
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
                for (int run = -2; run < runs; run++) {
                    long start = System.nanoTime();
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
                    long end = System.nanoTime();
                    results.forEach(r -> ops.release(r.value()));
                    if (run >= 0) {
                        times[run] = (end - start) / 1e9;
                    }
                }
                return median(times);
            } finally {
                inputs.forEach(ops::release);
            }
        }
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
