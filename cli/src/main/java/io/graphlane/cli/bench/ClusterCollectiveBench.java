package io.graphlane.cli.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.graphlane.backend.cpu.collective.CollectiveKind;
import io.graphlane.core.GraphlaneException;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The cross-node side of {@code bench collective --nodes N}: starts N rank JVMs ({@link CollectiveWorker}) from this
 * JVM's own class path on loopback ({@link RankProcesses}), each on a port the OS picks, hands them the seed's port, and
 * combines what they report. Every rank is stopped on every path: at the end, on failure, and on Ctrl-C; a rank whose
 * parent dies exits by itself when its stdin closes.
 */
final class ClusterCollectiveBench {
    /** How long a whole run may take before it is called hung. */
    private static final long DEADLINE_SECONDS = 600;

    /** Phase names as the ranks report them (milliseconds per collective, see {@code CollectivePhases}). */
    static final List<String> PHASES = List.of("send", "receive", "reduce", "wait");

    /**
     * What a run measured: the median over runs of the slowest rank, the median plain socket copy, and per phase the
     * milliseconds of one collective (averaged over the runs) summed over the ranks, in {@link #PHASES} order, and
     * whether every link carried its payload through shared memory; and the warm-up runs before the timed ones.
     */
    record Result(double seconds, double tcpSeconds, double[] phaseMillis, boolean sharedMemory, int warmupRuns) {
    }

    private final CollectiveKind kind;
    private final int nodes;
    private final int rows;
    private final int cols;
    private final int runs;
    private final double warmupSeconds;
    private final int chunkFloats;
    private final String payload;
    private final PrintWriter err;
    /** With --tls: the GRAPHLANE_TLS_* variables every rank gets (a key store made for this run); else empty. */
    private final java.util.Map<String, String> tlsEnvironment = new java.util.HashMap<>();
    private boolean tls;
    private boolean sharedMemory = true;
    private Path tlsDirectory;

    ClusterCollectiveBench(CollectiveKind kind, int nodes, int rows, int cols, int runs, double warmupSeconds, int chunkFloats, String payload,
                           PrintWriter err) {
        this.kind = kind;
        this.nodes = nodes;
        this.rows = rows;
        this.cols = cols;
        this.runs = runs;
        this.warmupSeconds = warmupSeconds;
        this.chunkFloats = chunkFloats;
        this.payload = payload;
        this.err = err;
    }

    /** Runs Artery and the payload sockets over TLS, with a self-signed key store made for the run. */
    ClusterCollectiveBench withTls(boolean on) {
        this.tls = on;
        return this;
    }

    /** Lets ranks move their payload through shared memory ({@code graphlane.cluster.collective.shared-memory}); on by default. */
    ClusterCollectiveBench withSharedMemory(boolean on) {
        this.sharedMemory = on;
        return this;
    }

    /** Runs the ranks and combines what they measured. */
    Result run() throws Exception {
        try (RankProcesses ranks = new RankProcesses("bench collective", CollectiveWorker.PREFIX, DEADLINE_SECONDS, err)) {
            if (tls) {
                makeKeyStore();
            }
            long heapMb = Math.max(512, 6L * rows * cols * Float.BYTES / (1 << 20) + 384);
            for (int r = 0; r < nodes; r++) {
                List<String> args = new java.util.ArrayList<>(List.of("bench", "collective-worker",
                        "--rank", String.valueOf(r), "--nodes", String.valueOf(nodes), "--op", kind.label(), "--rows", String.valueOf(rows),
                        "--cols", String.valueOf(cols), "--runs", String.valueOf(runs), "--warmup-seconds", String.valueOf(warmupSeconds), "--chunk-floats", String.valueOf(chunkFloats),
                        "--payload", payload));
                if (tls) {
                    args.add("--tls");
                }
                args.add("--shared-memory");
                args.add(sharedMemory ? "on" : "off");
                ranks.start(r, RankProcesses.graphlane(heapMb, args), tlsEnvironment);
            }
            int[] ports = new int[nodes];
            for (int seen = 0; seen < nodes; seen++) {
                RankProcesses.Line l = ranks.expect("address ");
                ports[l.rank()] = Integer.parseInt(l.text().substring("address ".length()).trim());
            }
            for (Process p : ranks.processes()) {
                Writer in = new java.io.OutputStreamWriter(p.getOutputStream(), StandardCharsets.UTF_8);
                in.write("seed " + ports[0] + "\n");
                in.flush();
            }
            double[][] times = new double[nodes][];
            double[] tcp = null;
            double[] phases = new double[PHASES.size()];
            int sharedLinks = 0;
            int warmupRuns = 0;
            ObjectMapper json = new ObjectMapper();
            for (int seen = 0; seen < nodes; seen++) {
                RankProcesses.Line l = ranks.expect("result ");
                JsonNode result = json.readTree(l.text().substring("result ".length()));
                times[l.rank()] = doubles(result.get("seconds"));
                sharedLinks += result.get("shared_memory_links").asInt();
                for (int p = 0; p < phases.length; p++) {
                    phases[p] += result.get("phase_ms").get(PHASES.get(p)).asDouble();
                }
                if (l.rank() == 0) {
                    tcp = doubles(result.get("tcp_seconds"));
                    warmupRuns = result.get("warmup_runs").asInt();
                }
            }
            for (Process p : ranks.processes()) {
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
            return new Result(median(slowest), median(tcp), phases, sharedLinks == nodes * (nodes - 1), warmupRuns);
        } finally {
            deleteKeyStore();
        }
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
