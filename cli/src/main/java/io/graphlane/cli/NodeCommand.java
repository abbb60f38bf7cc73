package io.graphlane.cli;

import io.graphlane.inference.weights.WeightFormat;
import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.graphlane.backend.cpu.CpuBackend;
import io.graphlane.backend.cpu.nn.CpuNeuralBackend;
import io.graphlane.cluster.ClusterConfigException;
import io.graphlane.cluster.ClusterProfile;
import io.graphlane.cluster.GraphlaneNode;
import io.graphlane.cluster.LaneStageHosting;
import io.graphlane.cluster.NodeIdentity;
import io.graphlane.cluster.NodeSettings;
import io.graphlane.cluster.StageHosting;
import io.graphlane.cluster.ParallelLayout;
import io.graphlane.cluster.pipeline.ClusterPipeline;
import io.graphlane.cluster.pipeline.ModelStageHosting;
import io.graphlane.inference.backend.CacheMemory;
import io.graphlane.inference.tensorparallel.TensorParallelism;
import io.graphlane.inference.model.ModelDirectory;
import io.graphlane.server.OpenAiServer;
import io.graphlane.scheduler.pipeline.PipelineSettings;
import io.graphlane.server.ServerOptions;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.OptionalLong;
import java.util.concurrent.Callable;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.pekko.Done;
import org.apache.pekko.actor.CoordinatedShutdown;
import org.apache.pekko.http.javadsl.ServerBinding;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code graphlane node}: runs one cluster member until it is stopped. It joins through its profile, takes its
 * rank (given, or derived from membership), hosts the lanes of stage i on rank i mod N, registers them with the
 * Receptionist and reports readiness on Pekko Management ({@code /ready}, {@code /alive}, {@code /cluster/members}).
 * With {@code --model} it loads only the weights of its stages; the serving node (rank 0, or {@code --serve}) runs
 * the OpenAI-compatible server over the stages of every node. With {@code --tensor-parallel T} every node holds one
 * shard of one stage (rank r: shard r mod T of stage r / T; N = stages × T) and the shards of a stage all-reduce
 * over the cluster.
 */
@Command(name = "node",
        mixinStandardHelpOptions = true,
        description = "Run one graphlane cluster member (Pekko Cluster, Management and Bootstrap) until stopped.")
public final class NodeCommand implements Callable<Integer> {

    @Option(names = "--profile", description = "How members find each other: local, static or kubernetes (default: ${DEFAULT-VALUE}).",
            defaultValue = "local")
    String profile;

    @Option(names = "--rank", description = "This node's rank in [0, N); derived from membership when absent"
            + " (required by the local profile, whose ports follow the rank).")
    Integer rank;

    @Option(names = "--nodes", description = "How many members the complete cluster has (default: ${DEFAULT-VALUE}).",
            defaultValue = "1")
    int nodes;

    @Option(names = "--stages", description = "Pipeline stages over the cluster; stage i runs on rank i mod N (default: --nodes,"
            + " or --nodes / T with --tensor-parallel T).")
    Integer stages;

    @Option(names = "--tensor-parallel", paramLabel = "T", defaultValue = "1", description = "Shards per stage, one per node:"
            + " rank r holds shard r mod T of stage r / T, so --nodes must be stages x T (needs --model; default: ${DEFAULT-VALUE}).")
    int tensorParallel;

    @Option(names = "--weights", paramLabel = "stored|f32|bf16|q8", defaultValue = "stored", description = "How hosted weights are"
            + " held: stored (default; the checkpoint's dtype), f32, bf16 or q8 (8-bit blocks for the projection and MLP matrices);"
            + " bf16 and q8 are refused with --tensor-parallel above 1.")
    String weights;

    @Option(names = "--model", paramLabel = "MODEL", description = "A Hugging Face model directory, a GGUF file, or a directory holding exactly one, to host and serve.")
    Path model;

    @Option(names = "--kv-budget", paramLabel = "auto|SIZE", description = "On the serving node: the KV-cache memory of one node"
            + " that the requests generating at once may reserve together, each its prompt plus max_tokens positions times what"
            + " one position takes on the node holding the most of it: a size such as 512m or 4g, or auto for half of what this"
            + " node's native memory still allows when it starts serving, taken as every node's (give the smallest node's"
            + " budget where nodes differ). A request that does not fit now waits; one larger than the budget gets a 400"
            + " (default: graphlane.cluster.pipeline.kv-budget, auto).")
    String kvBudget;

    @Option(names = "--serve", negatable = true, description = "Run the OpenAI-compatible server on this node"
            + " (default: on for rank 0 when a model is hosted).")
    Boolean serve;

    @Option(names = "--port", description = "The serving HTTP port (default: ${DEFAULT-VALUE}).", defaultValue = "8000")
    int port;

    @Option(names = "--http-host", paramLabel = "HOST", description = "The address the serving HTTP server binds, apart from"
            + " --host (Artery's): plain HTTP, so loopback unless a proxy or a trusted network is in front (0.0.0.0: every"
            + " interface; default: ${DEFAULT-VALUE}).", defaultValue = "127.0.0.1")
    String httpHost;

    @CommandLine.Mixin
    HttpServeOptions http = new HttpServeOptions();

    @Option(names = "--seed", paramLabel = "HOST:PORT", description = "A seed node's Artery address (static profile; repeatable).")
    List<String> seeds = new ArrayList<>();

    @Option(names = "--host", description = "The address to bind and advertise (static and kubernetes profiles; default: ${DEFAULT-VALUE}).",
            defaultValue = "127.0.0.1")
    String host;

    @Option(names = "--artery-port", description = "The Artery port (static and kubernetes profiles; default: ${DEFAULT-VALUE}).",
            defaultValue = "2551")
    int arteryPort;

    @Option(names = "--management-port", description = "The Management HTTP port (static and kubernetes profiles;"
            + " default: ${DEFAULT-VALUE}).", defaultValue = "8558")
    int managementPort;

    @Option(names = "--tls", description = "Run Artery over TLS (graphlane.cluster.profiles.tls; key and trust stores from"
            + " GRAPHLANE_TLS_* or application.conf).")
    boolean tls;

    @Option(names = "--allow-plaintext", description = "Allow Artery and the collective payload sockets to run without TLS on an"
            + " address that is not loopback (graphlane.cluster.allow-plaintext): unencrypted and unauthenticated, so any host"
            + " that reaches them can join the cluster. Only on a network you trust; prefer --tls.")
    boolean allowPlaintext;

    @Option(names = "--cores", paramLabel = "C", description = {"The CPU cores this node's lanes share when choosing threads per"
            + " projection (default: with the local profile, where every node runs on this host, the machine's cores / --nodes,"
            + " at least 1; else every core). Set it where several nodes share a host."})
    Integer cores;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    /**
     * The cores a node's lanes share: {@code requested} when given (at least 1), else with the local profile (all
     * {@code nodes} on this host) {@code available / nodes}, at least 1, else every core.
     *
     * @throws ClusterConfigException naming --cores when {@code requested} is below 1
     */
    static int coresFor(ClusterProfile profile, int nodes, Integer requested, int available) {
        if (requested != null) {
            if (requested < 1) {
                throw new ClusterConfigException("--cores must be >= 1, got " + requested);
            }
            return Math.min(requested, available);
        }
        return profile == ClusterProfile.LOCAL ? Math.max(1, available / Math.max(1, nodes)) : available;
    }

    @Override
    public Integer call() throws Exception {
        ServerOptions serverOptions = http.serverOptions();
        Duration drainGrace = http.drainGrace();
        // The drain runs in coordinated shutdown's service-unbind phase: give that phase the drain's time.
        Config base = ConfigFactory.parseString("pekko.coordinated-shutdown.phases.service-unbind.timeout = "
                + (drainGrace.toSeconds() + 10) + "s" + (allowPlaintext ? "\ngraphlane.cluster.allow-plaintext = on" : ""))
                .withFallback(ConfigFactory.load());
        NodeSettings settings = settings(base);
        int nodeCores = coresFor(settings.profile(), nodes, cores, Runtime.getRuntime().availableProcessors());
        if (tensorParallel < 1) {
            throw new ClusterConfigException("--tensor-parallel must be >= 1, got " + tensorParallel);
        }
        int stageCount = stages != null ? stages : tensorParallel > 1 && nodes % tensorParallel == 0 ? nodes / tensorParallel : nodes;
        ParallelLayout layout = new ParallelLayout(nodes, stageCount, tensorParallel);
        PipelineSettings servingSettings = pipelineSettings(base, stageCount);
        if (Boolean.TRUE.equals(serve) && model == null) {
            throw new ClusterConfigException("--serve needs --model: a node serves the model its cluster hosts");
        }
        try {
            java.net.InetAddress.getByName(httpHost);
        } catch (java.net.UnknownHostException e) {
            throw new ClusterConfigException("--http-host: cannot resolve '" + httpHost + "' to an address to bind");
        }
        if (tensorParallel > 1 && model == null) {
            throw new ClusterConfigException("--tensor-parallel " + tensorParallel + " needs --model: shards split a model's weights");
        }
        WeightFormat weightFormat = WeightFormat.parse("--weights", weights);
        if (tensorParallel > 1 && (weightFormat == WeightFormat.BF16 || weightFormat == WeightFormat.Q8)) {
            throw new ClusterConfigException("--weights " + weights + " is not supported with --tensor-parallel " + tensorParallel
                    + ": tensor-parallel shards hold F32 weights; use --weights stored or f32");
        }
        ModelDirectory directory = model == null ? null : ModelDirectory.open(model);
        if (directory != null && stageCount > directory.config().layerCount()) {
            throw new ClusterConfigException("--stages " + stageCount + " is more than the model's " + directory.config().layerCount()
                    + " layers (num_hidden_layers in " + directory.configFile() + ")");
        }
        if (directory != null && tensorParallel > 1) {
            new TensorParallelism(directory.config(), tensorParallel);
        }
        CpuNeuralBackend.shareCores(nodeCores);
        StageHosting hosting = directory == null ? LaneStageHosting.owning(new CpuBackend())
                : new ModelStageHosting(model, stageCount, tensorParallel, Executors.newSingleThreadExecutor(r -> {
                    Thread t = new Thread(r, "stage-loader");
                    t.setDaemon(true);
                    return t;
                }), weightFormat);
        GraphlaneNode node = GraphlaneNode.start(settings, base, layout, hosting);
        boolean serving = model != null && (serve != null ? serve : settings.rank().orElse(-1) == 0);
        if (serving) {
            ClusterPipeline generator = ClusterPipeline.start(node.system(), directory, layout, servingSettings);
            OpenAiServer server = new OpenAiServer(node.system(), generator, serverOptions);
            ServerBinding binding = server.bind(httpHost, port).toCompletableFuture().get(30, TimeUnit.SECONDS);
            node.readiness().requireServing(() -> server.draining() ? Optional.of("the server is draining")
                    : generator.unavailableReason());
            // On shutdown (SIGTERM runs coordinated shutdown): /health turns 503 and new completions are refused at once,
            // the ones in flight finish within --drain-seconds, then the server unbinds and the node leaves.
            CoordinatedShutdown.get(node.system()).addTask(CoordinatedShutdown.PhaseServiceUnbind(), "graphlane-drain-http",
                    () -> server.drain(drainGrace)
                            .thenCompose(drained -> binding.terminate(Duration.ofSeconds(5)))
                            .thenApply(ignored -> Done.getInstance()));
            spec.commandLine().getOut().println("graphlane node: serving " + generator.modelName() + " on http://"
                    + httpHost + ":" + port + " (POST /v1/completions, POST /v1/chat/completions, GET /metrics; KV-cache budget "
                    + CacheMemory.format(generator.kvBudget().bytes()) + " per node)");
        }
        PrintWriter out = spec.commandLine().getOut();
        out.println("graphlane node: profile " + settings.profile().configName() + ", management http://" + settings.host()
                + ":" + settings.managementPort() + " (GET /cluster/members, /ready, /alive), " + nodeCores + " of "
                + Runtime.getRuntime().availableProcessors() + " cores");
        out.flush();
        node.hosted().whenComplete((NodeIdentity id, Throwable error) -> {
            if (error == null) {
                out.println("graphlane node " + id.address() + ": rank " + id.rank() + " of " + id.nodes() + ", "
                        + (tensorParallel > 1 ? "shard " + id.shard() + " of " + tensorParallel + " of stage " : "stages ")
                        + id.stages() + " of " + stageCount + " up");
                out.flush();
            }
        });
        // SIGTERM or Ctrl-C runs coordinated shutdown (drain, unbind, leave the cluster) on the command's own thread
        // instead of the JVM's shutdown, so a requested stop exits 0 rather than the JVM's 128 + signal.
        AtomicBoolean stopRequested = new AtomicBoolean();
        ShutdownSignals.handle(() -> {
            stopRequested.set(true);
            CoordinatedShutdown.get(node.system()).runAll(CoordinatedShutdown.jvmExitReason());
        });
        node.system().getWhenTerminated().toCompletableFuture().join();
        return stopRequested.get() || node.readiness().isAlive() ? 0 : 1;
    }

    /**
     * The serving engine's bounds: graphlane.cluster.pipeline.max-active-requests active and as many queued, and the KV
     * budget of {@code --kv-budget}, else of graphlane.cluster.pipeline.kv-budget (none for auto: the pipeline derives it).
     */
    private PipelineSettings pipelineSettings(Config base, int stageCount) {
        int active = base.getInt("graphlane.cluster.pipeline.max-active-requests");
        if (active < 1) {
            throw new ClusterConfigException("graphlane.cluster.pipeline.max-active-requests must be >= 1, got " + active);
        }
        PipelineSettings settings = PipelineSettings.defaults(stageCount).withRequestLimits(active, active);
        OptionalLong budget = kvBudget != null ? KvBudgetOption.parse("--kv-budget", kvBudget)
                : KvBudgetOption.parse("graphlane.cluster.pipeline.kv-budget", base.getString("graphlane.cluster.pipeline.kv-budget"));
        return budget.isPresent() ? settings.withKvBudget(budget.getAsLong()) : settings;
    }

    private NodeSettings settings(Config base) {
        ClusterProfile p = ClusterProfile.parse(profile);
        if (p == ClusterProfile.LOCAL) {
            if (rank == null) {
                throw new ClusterConfigException("--rank is required by the local profile: node R listens on ports 2551+R and"
                        + " 8558+R");
            }
            if (rank < 0 || rank >= nodes) {
                throw new ClusterConfigException("--rank must be in [0, " + nodes + ") for --nodes " + nodes + ", got " + rank);
            }
            return NodeSettings.local(base, rank, nodes).withTls(tls);
        }
        String bind = p == ClusterProfile.KUBERNETES && System.getenv("POD_IP") != null ? System.getenv("POD_IP") : host;
        return new NodeSettings(p, nodes, rank == null ? OptionalInt.empty() : OptionalInt.of(rank), bind, arteryPort,
                managementPort, List.of(), seeds, tls);
    }
}
