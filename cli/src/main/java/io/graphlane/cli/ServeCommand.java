package io.graphlane.cli;

import io.graphlane.inference.backend.CacheMemory;
import io.graphlane.inference.pipeline.InferencePipeline;
import io.graphlane.inference.weights.WeightFormat;
import io.graphlane.server.OpenAiServer;
import io.graphlane.server.ServerOptions;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.http.javadsl.ServerBinding;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code graphlane serve}: an OpenAI-compatible HTTP server over the pipelined model. SIGTERM (or Ctrl-C) drains it:
 * {@code /health} turns 503, new completions are refused with 503 and {@code Retry-After}, the completions in flight
 * finish (up to {@code --drain-seconds}), then it unbinds, closes the model and exits 0.
 */
@Command(name = "serve", mixinStandardHelpOptions = true,
        description = "Serve the model over an OpenAI-compatible HTTP API: POST /v1/completions and POST /v1/chat/completions (SSE with \"stream\": true), GET /v1/models, GET /health, GET /metrics (Prometheus)."
                + " SIGTERM or Ctrl-C drains: requests in flight finish (up to --drain-seconds), new ones get 503, then it exits 0.")
public final class ServeCommand implements Callable<Integer> {

    @Option(names = "--model", paramLabel = "MODEL", description = "A Hugging Face model directory, a GGUF file, or a directory holding exactly one (default: the demo model).")
    Path model;

    @Option(names = "--stages", paramLabel = "P", defaultValue = "2", description = "Pipeline stages (default ${DEFAULT-VALUE}).")
    int stages;

    @Option(names = "--tensor-parallel", paramLabel = "T", defaultValue = "1",
            description = "Shards per stage: each stage runs on T lanes that split its heads and MLP columns and all-reduce"
                    + " (default ${DEFAULT-VALUE}).")
    int tensorParallel = 1;

    @Option(names = "--expert-parallel", paramLabel = "E", defaultValue = "1",
            description = "Expert lanes per stage of a mixture-of-experts model: each owns 1/E of every sparse layer's experts,"
                    + " rows travel by all-to-all (default ${DEFAULT-VALUE}).")
    int expertParallel = 1;

    @Option(names = "--weights", paramLabel = "stored|f32|bf16|q8", defaultValue = "stored", description = "How weights are held: stored (default; the checkpoint's dtype, F16/BF16 stay 16-bit), f32, bf16, or q8"
                    + " (8-bit blocks for the projection and MLP matrices). q8 is CPU only.")
    String weights = "stored";

    @Option(names = "--kv-budget", paramLabel = "auto|SIZE", defaultValue = KvBudgetOption.AUTO, description = "The KV-cache memory"
            + " the requests generating at once may reserve together, each its prompt plus max_tokens positions: a size such as"
            + " 512m or 4g, or auto for half of what the caches may still take once the weights are loaded (on the CPU: what"
            + " JavaCPP still allows, by default up to -Xmx, and what the machine has available; on a GPU its free memory)."
            + " A request that does not fit now waits; one larger than the budget gets a 400 (default ${DEFAULT-VALUE}).")
    String kvBudget = KvBudgetOption.AUTO;

    @Option(names = "--host", defaultValue = "127.0.0.1", description = "Address to bind (default ${DEFAULT-VALUE}).")
    String host;

    @Option(names = "--port", defaultValue = "8000", description = "Port to bind; 0 picks a free one (default ${DEFAULT-VALUE}).")
    int port;

    @CommandLine.Mixin
    HttpServeOptions http = new HttpServeOptions();

    @CommandLine.Mixin
    DeviceWeightsOptions deviceWeights = new DeviceWeightsOptions();

    @CommandLine.Mixin
    ServeBackendOptions backend = new ServeBackendOptions();

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    /** A running server: its model, its HTTP server, its binding and its actor system. */
    public record Running(InferencePipeline model, OpenAiServer server, ServerBinding binding, ActorSystem<Void> system)
            implements AutoCloseable {
        /** The port actually bound. */
        public int port() {
            return binding.localAddress().getPort();
        }

        /**
         * Drains (see {@link OpenAiServer#drain}) for at most {@code grace}, then closes; returns whether every request
         * in flight finished within it.
         */
        public boolean drainAndClose(Duration grace) throws Exception {
            boolean drained;
            try {
                drained = server.drain(grace).toCompletableFuture().get(grace.toMillis() + 5_000, TimeUnit.MILLISECONDS);
            } finally {
                close();
            }
            return drained;
        }

        /** Unbinds (connections still sending a response get 5 s), closes the model, then the actor system. */
        @Override
        public void close() throws Exception {
            try {
                binding.terminate(Duration.ofSeconds(5)).toCompletableFuture().get(10, TimeUnit.SECONDS);
            } finally {
                model.close();
                system.terminate();
                system.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
            }
        }
    }

    /** Loads the model and binds the server; the caller closes it. */
    public Running start() throws Exception {
        ServerOptions options = http.serverOptions();
        http.drainGrace();
        java.util.OptionalLong budget = KvBudgetOption.parse("--kv-budget", kvBudget);
        ActorSystem<Void> system = ActorSystem.create(Behaviors.empty(), "graphlane-serve");
        InferencePipeline pipeline;
        try {
            WeightFormat format = WeightFormat.parse("--weights", weights);
            InferencePipeline.Builder b = backend.configure(InferencePipeline.builder().stages(stages).tensorParallel(tensorParallel)
                    .expertParallel(expertParallel).weights(format).actorSystem(system), tensorParallel, format);
            budget.ifPresent(b::kvBudget);
            b = deviceWeights.apply(b, line -> spec.commandLine().getErr().println("graphlane serve: " + line));
            pipeline = (model == null ? b.demoModel() : b.model(model)).build();
        } catch (RuntimeException e) {
            system.terminate();
            throw e;
        }
        try {
            OpenAiServer server = new OpenAiServer(system, pipeline, options);
            ServerBinding binding = server.bind(host, port).toCompletableFuture().get(30, TimeUnit.SECONDS);
            return new Running(pipeline, server, binding, system);
        } catch (java.util.concurrent.ExecutionException e) {
            pipeline.close();
            system.terminate();
            throw new io.graphlane.core.GraphlaneException("cannot bind " + host + ":" + port + ": " + e.getCause().getMessage(), e.getCause());
        }
    }

    @Override
    public Integer call() throws Exception {
        Running running = start();
        var out = spec.commandLine().getOut();
        out.println("graphlane: serving " + running.model().modelName() + " (" + stages + " stages"
                + (tensorParallel > 1 ? " x " + tensorParallel + " shards" : "") + (backend.gpu() ? " on " + running.model().backendDescription() : "")
                + ", KV-cache budget "
                + CacheMemory.format(running.model().kvBudget().bytes()) + ") on http://" + host + ":" + running.port()
                + "  (POST /v1/completions, POST /v1/chat/completions, GET /v1/models, GET /health, GET /metrics;"
                + " Ctrl-C or SIGTERM drains and stops)");
        out.println("graphlane: sampling defaults for fields a request leaves out: "
                + running.model().generationDefaults().describe() + " (the model's generation_config.json; a field neither the request nor that file sets takes the API's default)");
        out.flush();
        CountDownLatch stopped = new CountDownLatch(1);
        java.util.concurrent.atomic.AtomicBoolean draining = new java.util.concurrent.atomic.AtomicBoolean();
        Runnable drainAndStop = () -> {
            draining.set(true);
            try {
                Duration grace = http.drainGrace();
                boolean drained = running.drainAndClose(grace);
                System.err.println(drained ? "graphlane: drained; stopped"
                        : "graphlane: stopped after --drain-seconds " + grace.toSeconds() + " with requests still in flight");
            } catch (Exception e) {
                System.err.println("graphlane: shutdown: " + e.getMessage());
            } finally {
                stopped.countDown();
            }
        };
        if (!ShutdownSignals.handle(drainAndStop)) {
            // No signal handler on this platform: drain from a shutdown hook (the exit status is then the JVM's).
            Runtime.getRuntime().addShutdownHook(new Thread(drainAndStop, "graphlane-serve-shutdown"));
        }
        running.system().getWhenTerminated().toCompletableFuture().get();
        if (draining.get()) {
            stopped.await(60, TimeUnit.SECONDS); // the drain closed the system; let it report
        }
        return 0;
    }
}
