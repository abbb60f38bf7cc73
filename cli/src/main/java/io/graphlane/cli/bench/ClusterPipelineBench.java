package io.graphlane.cli.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.graphlane.core.GraphlaneException;
import io.graphlane.inference.api.GenerationRequest;
import io.graphlane.inference.demo.DemoModel;
import io.graphlane.inference.pipeline.InferencePipeline;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code graphlane bench cluster}: decode tokens/s of R concurrent greedy completions through the pipeline of a cluster
 * of N node JVMs on loopback ({@code graphlane node}, static profile, ports the OS picks; rank 0 serves the OpenAI API
 * over every node's stages), against the engine over local stage lanes with the same stages and requests, in the same
 * run. The local engine runs first, in this JVM, before any node starts; the nodes are stopped on every path.
 */
@Command(name = "cluster", mixinStandardHelpOptions = true,
        description = {"Tokens/s of concurrent completions served by a pipeline across N node JVMs on loopback, against the",
            "same pipeline over local stage lanes in this JVM; ratio = cluster / local (the demo model unless --model)."})
public final class ClusterPipelineBench implements Callable<Integer> {
    /** How long a whole run may take before it is called hung. */
    private static final long DEADLINE_SECONDS = 900;
    private static final String PREFIX = "graphlane node";

    @Option(names = "--nodes", paramLabel = "N", defaultValue = "3", description = "Node JVMs (default ${DEFAULT-VALUE}).")
    int nodes;

    @Option(names = "--stages", paramLabel = "P", description = "Pipeline stages, stage i on rank i mod N (default: --nodes, or --nodes / T with --tensor-parallel T).")
    Integer stages;

    @Option(names = "--tensor-parallel", paramLabel = "T", defaultValue = "1",
            description = "Shards per stage, one per node (nodes = stages x T), and the same on the local engine's lanes (default ${DEFAULT-VALUE}).")
    int tensorParallel;

    @Option(names = "--requests", paramLabel = "R", defaultValue = "8", description = "Concurrent requests (default ${DEFAULT-VALUE}).")
    int requests;

    @Option(names = "--new-tokens", paramLabel = "T", defaultValue = "64", description = "Tokens generated per request (default ${DEFAULT-VALUE}).")
    int newTokens;

    @Option(names = "--model", paramLabel = "MODEL", description = "A Hugging Face model directory, a GGUF file, or a directory holding exactly one (default: the demo model).")
    Path model;

    @Option(names = "--rounds", paramLabel = "K", defaultValue = "3",
            description = "Measured rounds of every request at once on each path, after one warm-up round of the same size; the median is reported (default ${DEFAULT-VALUE}).")
    int rounds;

    @Option(names = "--json", description = "Print one JSON object.")
    boolean json;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        int stageCount = stages != null ? stages : tensorParallel > 1 ? nodes / Math.max(1, tensorParallel) : nodes;
        if (nodes < 1 || stageCount < 1 || tensorParallel < 1 || requests < 1 || newTokens < 1 || rounds < 1) {
            throw new GraphlaneException("--nodes, --stages, --tensor-parallel, --requests, --new-tokens and --rounds must be >= 1; got "
                    + nodes + ", " + stageCount + ", " + tensorParallel + ", " + requests + ", " + newTokens + ", " + rounds);
        }
        if (tensorParallel > 1 && nodes != stageCount * tensorParallel) {
            throw new GraphlaneException("--tensor-parallel " + tensorParallel + " holds one shard per node, so --nodes must be --stages x "
                    + tensorParallel + " = " + stageCount * tensorParallel + ", got " + nodes);
        }
        Path dir = model != null ? model : DemoModel.ensure();
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        double local = local(dir, stageCount);
        if (!json) {
            out.printf(Locale.ROOT, "local engine, %d stages x %d shards: %.1f tokens/s%n", stageCount, tensorParallel, local);
            out.flush();
        }
        double cluster = cluster(dir, stageCount, err);
        double ratio = cluster / local;
        if (json) {
            ObjectNode o = new ObjectMapper().createObjectNode();
            o.put("nodes", nodes).put("stages", stageCount).put("tensor_parallel", tensorParallel).put("requests", requests).put("new_tokens", newTokens).put("rounds", rounds);
            o.put("cluster_tokens_per_s", cluster).put("local_tokens_per_s", local).put("ratio", ratio);
            out.println(o);
        } else {
            out.printf(Locale.ROOT, "cluster of %d nodes, %d stages x %d shards: %.1f tokens/s = %.2fx the local engine%n", nodes, stageCount,
                    tensorParallel, cluster, ratio);
        }
        out.flush();
        return 0;
    }

    private List<int[]> prompts() {
        List<int[]> prompts = new ArrayList<>();
        for (int i = 0; i < requests; i++) {
            prompts.add(new int[] {1 + i, 2 + i, 3 + i, 4 + i});
        }
        return prompts;
    }

    /**
     * Tokens/s of the engine over local stage lanes: the median of {@code rounds} rounds of every request at once, after
     * a warm-up round of the same size (the JIT has compiled the hot paths of both sides before anything is timed).
     */
    private double local(Path dir, int stageCount) throws Exception {
        try (InferencePipeline pipeline = InferencePipeline.builder().model(dir).stages(stageCount).tensorParallel(tensorParallel).build()) {
            PipelineBench.generatedTokens(pipeline, greedy(newTokens)); // warm-up
            double[] rates = new double[rounds];
            for (int r = 0; r < rounds; r++) {
                long start = System.nanoTime();
                int tokens = PipelineBench.generatedTokens(pipeline, greedy(newTokens));
                rates[r] = tokens / ((System.nanoTime() - start) / 1e9);
            }
            return ClusterCollectiveBench.median(rates);
        }
    }

    private List<GenerationRequest> greedy(int tokens) {
        List<GenerationRequest> batch = new ArrayList<>();
        for (int[] p : prompts()) {
            batch.add(GenerationRequest.greedy(java.util.Arrays.stream(p).boxed().toList(), tokens));
        }
        return batch;
    }

    /** Tokens/s of the cluster's pipeline through rank 0's HTTP API, measured as {@link #local} is. */
    private double cluster(Path dir, int stageCount, PrintWriter err) throws Exception {
        int[] artery = freePorts(nodes);
        int[] management = freePorts(nodes);
        int http = freePorts(1)[0];
        try (RankProcesses ranks = new RankProcesses("bench cluster", PREFIX, DEADLINE_SECONDS, err)) {
            for (int r = 0; r < nodes; r++) {
                List<String> args = new ArrayList<>(List.of("node", "--profile", "static", "--rank", String.valueOf(r),
                        "--nodes", String.valueOf(nodes), "--stages", String.valueOf(stageCount), "--model", dir.toString(),
                        "--tensor-parallel", String.valueOf(tensorParallel),
                        "--host", "127.0.0.1", "--artery-port", String.valueOf(artery[r]),
                        "--management-port", String.valueOf(management[r]), "--seed", "127.0.0.1:" + artery[0],
                        // Every node runs on this host: each gets its share of the cores, as the local engine's lanes do.
                        "--cores", String.valueOf(Math.max(1, Runtime.getRuntime().availableProcessors() / nodes))));
                if (r == 0) {
                    args.addAll(List.of("--port", String.valueOf(http)));
                }
                ranks.start(r, RankProcesses.graphlane(1024, args));
            }
            HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
            URI base = URI.create("http://127.0.0.1:" + http);
            awaitHealthy(client, base, ranks);
            complete(client, base, newTokens); // warm-up
            double[] rates = new double[rounds];
            for (int r = 0; r < rounds; r++) {
                long start = System.nanoTime();
                int tokens = complete(client, base, newTokens);
                rates[r] = tokens / ((System.nanoTime() - start) / 1e9);
            }
            return ClusterCollectiveBench.median(rates);
        }
    }

    /** Waits until rank 0 answers {@code /health} with 200: every stage has a reachable host. */
    private static void awaitHealthy(HttpClient client, URI base, RankProcesses ranks) throws Exception {
        HttpRequest health = HttpRequest.newBuilder(base.resolve("/health")).timeout(Duration.ofSeconds(5)).GET().build();
        while (ranks.secondsLeft() > 0) {
            for (Process p : ranks.processes()) {
                if (!p.isAlive()) {
                    ranks.expect("up"); // reports which rank exited and how
                }
            }
            try {
                if (client.send(health, HttpResponse.BodyHandlers.discarding()).statusCode() == 200) {
                    return;
                }
            } catch (IOException notListening) {
                // rank 0 has not bound its port yet
            }
            TimeUnit.MILLISECONDS.sleep(200); // paces the polling only
        }
        throw new GraphlaneException("bench cluster: rank 0 did not report healthy (GET /health 200) in time");
    }

    /** Sends every request at once as a greedy completion of {@code tokens} tokens; returns the tokens generated. */
    private int complete(HttpClient client, URI base, int tokens) throws Exception {
        ObjectMapper m = new ObjectMapper();
        List<CompletableFuture<HttpResponse<String>>> sent = new ArrayList<>();
        for (int[] prompt : prompts()) {
            ObjectNode body = m.createObjectNode();
            var ids = body.putArray("prompt");
            for (int id : prompt) {
                ids.add(id);
            }
            body.put("max_tokens", tokens).put("temperature", 0);
            HttpRequest post = HttpRequest.newBuilder(base.resolve("/v1/completions")).timeout(Duration.ofMinutes(10))
                    .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body.toString())).build();
            sent.add(client.sendAsync(post, HttpResponse.BodyHandlers.ofString()));
        }
        int generated = 0;
        for (CompletableFuture<HttpResponse<String>> f : sent) {
            HttpResponse<String> response = f.get(10, TimeUnit.MINUTES);
            if (response.statusCode() != 200) {
                throw new GraphlaneException("bench cluster: a completion answered HTTP " + response.statusCode() + ": " + response.body());
            }
            JsonNode usage = m.readTree(response.body()).get("usage");
            generated += usage.get("completion_tokens").asInt();
        }
        return generated;
    }

    private static int[] freePorts(int count) throws IOException {
        int[] ports = new int[count];
        List<ServerSocket> held = new ArrayList<>();
        try {
            for (int i = 0; i < count; i++) {
                ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress());
                held.add(s);
                ports[i] = s.getLocalPort();
            }
        } finally {
            for (ServerSocket s : held) {
                s.close();
            }
        }
        return ports;
    }
}
