package io.graphlane.cli.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.graphlane.backend.cpu.collective.CollectiveKind;
import io.graphlane.core.GraphlaneException;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * The cross-node side of {@code bench collective --nodes N}: starts N rank JVMs ({@link CollectiveWorker}) from this
 * JVM's own class path on loopback, each on a port the OS picks, hands them the seed's port, and combines what they
 * report. Every rank is stopped on every path: at the end, on failure, and on Ctrl-C (a shutdown hook); a rank whose
 * parent dies exits by itself when its stdin closes.
 */
final class ClusterCollectiveBench {
    /** How long a whole run may take before it is called hung. */
    private static final long DEADLINE_SECONDS = 600;

    private record Line(int rank, String text) {
    }

    /** Phase names as the ranks report them (milliseconds per collective, see {@code CollectivePhases}). */
    static final List<String> PHASES = List.of("send", "receive", "reduce", "wait");

    /**
     * What a run measured: the median over runs of the slowest rank, the median plain socket copy, and per phase the
     * milliseconds of one collective (averaged over the runs) summed over the ranks, in {@link #PHASES} order.
     */
    record Result(double seconds, double tcpSeconds, double[] phaseMillis) {
    }

    private final CollectiveKind kind;
    private final int nodes;
    private final int rows;
    private final int cols;
    private final int runs;
    private final int chunkFloats;
    private final String payload;
    private final PrintWriter err;
    private final List<Process> ranks = new ArrayList<>();
    private final BlockingQueue<Line> lines = new LinkedBlockingQueue<>();
    private final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(DEADLINE_SECONDS);

    ClusterCollectiveBench(CollectiveKind kind, int nodes, int rows, int cols, int runs, int chunkFloats, String payload, PrintWriter err) {
        this.kind = kind;
        this.nodes = nodes;
        this.rows = rows;
        this.cols = cols;
        this.runs = runs;
        this.chunkFloats = chunkFloats;
        this.payload = payload;
        this.err = err;
    }

    /** Runs the ranks and combines what they measured. */
    Result run() throws Exception {
        Thread reaper = new Thread(this::destroyAll, "bench-collective-reaper");
        Runtime.getRuntime().addShutdownHook(reaper);
        try {
            for (int r = 0; r < nodes; r++) {
                start(r);
            }
            int[] ports = new int[nodes];
            for (int seen = 0; seen < nodes; seen++) {
                Line l = expect("address ");
                ports[l.rank()] = Integer.parseInt(l.text().substring("address ".length()).trim());
            }
            for (Process p : ranks) {
                Writer in = new java.io.OutputStreamWriter(p.getOutputStream(), StandardCharsets.UTF_8);
                in.write("seed " + ports[0] + "\n");
                in.flush();
            }
            double[][] times = new double[nodes][];
            double[] tcp = null;
            double[] phases = new double[PHASES.size()];
            ObjectMapper json = new ObjectMapper();
            for (int seen = 0; seen < nodes; seen++) {
                Line l = expect("result ");
                JsonNode result = json.readTree(l.text().substring("result ".length()));
                times[l.rank()] = doubles(result.get("seconds"));
                for (int p = 0; p < phases.length; p++) {
                    phases[p] += result.get("phase_ms").get(PHASES.get(p)).asDouble();
                }
                if (l.rank() == 0) {
                    tcp = doubles(result.get("tcp_seconds"));
                }
            }
            for (Process p : ranks) {
                if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
                    throw new GraphlaneException("a rank of bench collective did not exit cleanly (exit " + (p.isAlive() ? "none" : p.exitValue()) + ")");
                }
            }
            double[] slowest = new double[runs];
            for (int run = 0; run < runs; run++) {
                for (int r = 0; r < nodes; r++) {
                    slowest[run] = Math.max(slowest[run], times[r][run]);
                }
            }
            return new Result(median(slowest), median(tcp), phases);
        } finally {
            destroyAll();
            try {
                Runtime.getRuntime().removeShutdownHook(reaper);
            } catch (IllegalStateException shuttingDown) {
                // The hook is running or has run: the ranks are gone either way.
            }
        }
    }

    private void start(int rank) throws IOException {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        long heapMb = Math.max(512, 6L * rows * cols * Float.BYTES / (1 << 20) + 384);
        List<String> command = new ArrayList<>(List.of(java, "-Xmx" + heapMb + "m", "-XX:+UseParallelGC",
                "-cp", System.getProperty("java.class.path"), "io.graphlane.cli.GraphlaneCli", "bench", "collective-worker",
                "--rank", String.valueOf(rank), "--nodes", String.valueOf(nodes), "--op", kind.label(), "--rows", String.valueOf(rows),
                "--cols", String.valueOf(cols), "--runs", String.valueOf(runs), "--chunk-floats", String.valueOf(chunkFloats),
                "--payload", payload));
        Process p = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        ranks.add(p);
        Thread reader = new Thread(() -> {
            try (BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                String line;
                while ((line = out.readLine()) != null) {
                    if (line.startsWith(CollectiveWorker.PREFIX)) {
                        lines.add(new Line(rank, line.substring(CollectiveWorker.PREFIX.length())));
                    } else {
                        synchronized (err) {
                            err.println("[rank " + rank + "] " + line);
                            err.flush();
                        }
                    }
                }
            } catch (IOException ignored) {
                // The rank is gone; expect() notices.
            }
            lines.add(new Line(rank, "exited"));
        }, "bench-rank-" + rank);
        reader.setDaemon(true);
        reader.start();
    }

    private Line expect(String what) throws InterruptedException {
        Line l = lines.poll(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        if (l == null) {
            throw new GraphlaneException("bench collective: no '" + what.trim() + "' from the ranks within " + DEADLINE_SECONDS + " s");
        }
        if (l.text().equals("exited")) {
            Process p = ranks.get(l.rank());
            p.waitFor(10, TimeUnit.SECONDS);
            throw new GraphlaneException("bench collective: rank " + l.rank() + " exited (status " + (p.isAlive() ? "unknown" : p.exitValue())
                    + ") before reporting its " + what.trim() + "; see its log lines above");
        }
        if (!l.text().startsWith(what)) {
            throw new GraphlaneException("bench collective: rank " + l.rank() + " said '" + l.text() + "', expected its " + what.trim());
        }
        return l;
    }

    private void destroyAll() {
        for (Process p : ranks) {
            p.destroyForcibly();
        }
        for (Process p : ranks) {
            try {
                p.waitFor(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    private static double[] doubles(JsonNode array) {
        double[] d = new double[array.size()];
        for (int i = 0; i < d.length; i++) {
            d[i] = array.get(i).asDouble();
        }
        return d;
    }

    static double median(double[] values) {
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        return sorted[sorted.length / 2];
    }
}
