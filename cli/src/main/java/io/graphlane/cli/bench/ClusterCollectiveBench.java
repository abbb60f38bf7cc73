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

    private final CollectiveKind kind;
    private final int nodes;
    private final int rows;
    private final int cols;
    private final int runs;
    private final int chunkFloats;
    private final String payload;
    private final PrintWriter err;
    private final List<Process> ranks = new ArrayList<>();
    /** With --tls: the GRAPHLANE_TLS_* variables every rank gets (a key store made for this run); else empty. */
    private final java.util.Map<String, String> tlsEnvironment = new java.util.HashMap<>();
    private boolean tls;
    private Path tlsDirectory;
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

    /** Runs Artery and the payload sockets over TLS, with a self-signed key store made for the run. */
    ClusterCollectiveBench withTls(boolean on) {
        this.tls = on;
        return this;
    }

    /** Runs the ranks; returns {seconds, tcp_seconds}: the median over runs of the slowest rank, and of the socket copy. */
    double[] run() throws Exception {
        Thread reaper = new Thread(this::destroyAll, "bench-collective-reaper");
        Runtime.getRuntime().addShutdownHook(reaper);
        try {
            if (tls) {
                makeKeyStore();
            }
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
            ObjectMapper json = new ObjectMapper();
            for (int seen = 0; seen < nodes; seen++) {
                Line l = expect("result ");
                JsonNode result = json.readTree(l.text().substring("result ".length()));
                times[l.rank()] = doubles(result.get("seconds"));
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
            return new double[] {median(slowest), median(tcp)};
        } finally {
            destroyAll();
            deleteKeyStore();
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
        if (tls) {
            command.add("--tls");
        }
        ProcessBuilder builder = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT);
        builder.environment().putAll(tlsEnvironment);
        Process p = builder.start();
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

    /** One self-signed EC key pair (keytool), key store and trust store of every rank, with a random password. */
    private void makeKeyStore() throws IOException, InterruptedException {
        tlsDirectory = java.nio.file.Files.createTempDirectory("graphlane-bench-tls");
        Path store = tlsDirectory.resolve("node.p12");
        byte[] secret = new byte[16];
        new java.security.SecureRandom().nextBytes(secret);
        String password = java.util.HexFormat.of().formatHex(secret);
        ProcessBuilder keytool = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "keytool").toString(), "-genkeypair",
                "-alias", "node", "-keyalg", "EC", "-groupname", "secp256r1", "-validity", "1", "-dname", "CN=graphlane-bench",
                "-storetype", "PKCS12", "-keystore", store.toString(), "-storepass:env", "GRAPHLANE_BENCH_STORE_PASSWORD")
                .redirectErrorStream(true);
        keytool.environment().put("GRAPHLANE_BENCH_STORE_PASSWORD", password);
        Process p = keytool.start();
        String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (p.waitFor() != 0) {
            throw new GraphlaneException("bench collective --tls: keytool could not make a key store: " + output.strip());
        }
        tlsEnvironment.put("GRAPHLANE_TLS_KEY_STORE", store.toString());
        tlsEnvironment.put("GRAPHLANE_TLS_TRUST_STORE", store.toString());
        tlsEnvironment.put("GRAPHLANE_TLS_KEY_STORE_PASSWORD", password);
        tlsEnvironment.put("GRAPHLANE_TLS_KEY_PASSWORD", password);
        tlsEnvironment.put("GRAPHLANE_TLS_TRUST_STORE_PASSWORD", password);
    }

    private void deleteKeyStore() {
        if (tlsDirectory != null) {
            try {
                java.nio.file.Files.deleteIfExists(tlsDirectory.resolve("node.p12"));
                java.nio.file.Files.deleteIfExists(tlsDirectory);
            } catch (IOException e) {
                err.println("bench collective: could not delete " + tlsDirectory + ": " + e.getMessage());
            }
        }
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
