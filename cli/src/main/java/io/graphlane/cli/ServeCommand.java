package io.graphlane.cli;

import io.graphlane.inference.pipeline.InferencePipeline;
import io.graphlane.server.OpenAiServer;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.http.javadsl.ServerBinding;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code graphlane serve}: an OpenAI-compatible HTTP server over the pipelined model. */
@Command(name = "serve", mixinStandardHelpOptions = true,
        description = "Serve the model over an OpenAI-compatible HTTP API: POST /v1/completions and POST /v1/chat/completions (SSE with \"stream\": true), GET /v1/models, GET /health, GET /metrics (Prometheus).")
public final class ServeCommand implements Callable<Integer> {

    @Option(names = "--model", paramLabel = "DIR", description = "A Hugging Face model directory (default: the demo model).")
    Path model;

    @Option(names = "--stages", paramLabel = "P", defaultValue = "2", description = "Pipeline stages (default ${DEFAULT-VALUE}).")
    int stages;

    @Option(names = "--tensor-parallel", paramLabel = "T", defaultValue = "1",
            description = "Shards per stage: each stage runs on T lanes that split its heads and MLP columns and all-reduce"
                    + " (default ${DEFAULT-VALUE}).")
    int tensorParallel = 1;

    @Option(names = "--host", defaultValue = "127.0.0.1", description = "Address to bind (default ${DEFAULT-VALUE}).")
    String host;

    @Option(names = "--port", defaultValue = "8000", description = "Port to bind; 0 picks a free one (default ${DEFAULT-VALUE}).")
    int port;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    /** A running server: its model, its binding and its actor system. */
    public record Running(InferencePipeline model, ServerBinding binding, ActorSystem<Void> system) implements AutoCloseable {
        /** The port actually bound. */
        public int port() {
            return binding.localAddress().getPort();
        }

        @Override
        public void close() throws Exception {
            binding.unbind().toCompletableFuture().get(10, TimeUnit.SECONDS);
            model.close();
            system.terminate();
            system.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
        }
    }

    /** Loads the model and binds the server; the caller closes it. */
    public Running start() throws Exception {
        ActorSystem<Void> system = ActorSystem.create(Behaviors.empty(), "graphlane-serve");
        InferencePipeline pipeline;
        try {
            InferencePipeline.Builder b = InferencePipeline.builder().stages(stages).tensorParallel(tensorParallel)
                    .actorSystem(system);
            pipeline = (model == null ? b.demoModel() : b.model(model)).build();
        } catch (RuntimeException e) {
            system.terminate();
            throw e;
        }
        try {
            ServerBinding binding = new OpenAiServer(system, pipeline).bind(host, port).toCompletableFuture().get(30, TimeUnit.SECONDS);
            return new Running(pipeline, binding, system);
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
                + (tensorParallel > 1 ? " x " + tensorParallel + " shards" : "") + ") on http://" + host + ":" + running.port()
                + "  (POST /v1/completions, POST /v1/chat/completions, GET /v1/models, GET /health, GET /metrics; Ctrl-C stops)");
        out.flush();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                running.close();
            } catch (Exception e) {
                System.err.println("graphlane: shutdown: " + e.getMessage());
            }
        }, "graphlane-serve-shutdown"));
        running.system().getWhenTerminated().toCompletableFuture().get();
        return 0;
    }
}
