package io.graphlane.inference.pipeline;

import io.graphlane.actors.lane.LaneGroup;
import io.graphlane.actors.materialize.MaterializationSettings;
import io.graphlane.actors.materialize.MaterializationSupervisor;
import io.graphlane.actors.lane.WorkTracing;
import io.graphlane.backend.cpu.CpuBackend;
import io.graphlane.backend.cpu.CpuCompletion;
import io.graphlane.backend.cpu.CpuExecutor;
import io.graphlane.backend.cpu.CpuWork;
import io.graphlane.backend.cpu.collective.CollectiveSettings;
import io.graphlane.backend.cpu.nn.CpuNeuralBackend;
import io.graphlane.backend.cpu.nn.CpuNeuralOps;
import io.graphlane.backend.cpu.nn.CpuTensor;
import io.graphlane.backend.cpu.param.CpuParameter;
import io.graphlane.backend.cpu.param.CpuParameterBackend;
import io.graphlane.checkpoint.CheckpointSource;
import io.graphlane.core.GraphlaneException;
import io.graphlane.core.trace.TraceRecorder;
import io.graphlane.inference.api.Generation;
import io.graphlane.inference.api.GenerationListener;
import io.graphlane.inference.api.GenerationRefusedException;
import io.graphlane.inference.api.GenerationRequest;
import io.graphlane.inference.api.TextGenerator;
import io.graphlane.inference.api.TokenCodec;
import io.graphlane.inference.demo.DemoModel;
import io.graphlane.inference.llama.LlamaConfig;
import io.graphlane.inference.llama.LlamaStage;
import io.graphlane.inference.model.ModelDirectory;
import io.graphlane.inference.sampling.Sampler;
import io.graphlane.inference.stage.StagePlan;
import io.graphlane.inference.stage.StageSpec;
import io.graphlane.inference.tensorparallel.TensorParallelStage;
import io.graphlane.inference.tensorparallel.TensorParallelStages;
import io.graphlane.inference.tensorparallel.TensorParallelism;
import io.graphlane.inference.tokenizer.TextTokenizer;
import io.graphlane.inference.weights.SupervisedWeightsLoader;
import io.graphlane.scheduler.pipeline.Pipeline;
import io.graphlane.scheduler.pipeline.PipelineOverloadedException;
import io.graphlane.scheduler.pipeline.PipelineRequest;
import io.graphlane.scheduler.pipeline.PipelineSettings;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Props;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A Llama-family model served by pipeline-parallel inference inside a JVM: its layers split
 * into stages, each stage a CPU lane owned by its lane actor, several requests moving through
 * the stages at once. Each stage's weights are loaded as one atomic unit through a
 * {@link MaterializationSupervisor} on a dedicated loading lane (settings under
 * {@code graphlane.materialization}), and released at close once the lanes have stopped. The
 * embedding API:
 *
 * <pre>{@code
 * try (InferencePipeline model = InferencePipeline.builder().model(dir).stages(2).build()) {
 *     model.submit(GenerationRequest.greedy(model.tokenizer()..., 16), listener);
 * }
 * }</pre>
 */
public final class InferencePipeline implements TextGenerator {
    private static final Logger LOG = LoggerFactory.getLogger(InferencePipeline.class);
    private static final AtomicInteger INSTANCES = new AtomicInteger();

    private final String name;
    private final LlamaConfig config;
    private final Set<Integer> eosTokenIds;
    private final TextTokenizer tokenizer;
    private final TokenCodec codec;
    private final ActorSystem<?> system;
    private final boolean ownsSystem;
    private final CpuBackend backend;
    private final LaneGroup<CpuExecutor, CpuCompletion, CpuWork> lanes;
    private final LlamaStageProgram<CpuTensor, CpuWork> program;
    private final List<LlamaStage<CpuTensor>> stages;
    private final ActorRef<MaterializationSupervisor.Command<CpuParameter>> supervisor;
    /** The supervised weights of single-lane stages; null when the stages are tensor-parallel (they own their shards). */
    private final SupervisedWeightsLoader weights;
    private final List<TensorParallelStage> tensorParallelStages;
    private final Pipeline<CpuWork, StageSlot<CpuTensor>> pipeline;
    private volatile boolean closed;

    private InferencePipeline(Builder b, ModelDirectory model) {
        this.name = b.modelName != null ? b.modelName : model.name();
        this.config = model.config();
        this.eosTokenIds = model.eosTokenIds();
        this.ownsSystem = b.system == null;
        this.system = b.system != null ? b.system : ActorSystem.create(Behaviors.empty(), "graphlane");
        this.tokenizer = model.tokenizer();
        this.codec = TokenCodec.of(tokenizer, eosTokenIds.isEmpty() ? -1 : eosTokenIds.iterator().next());
        this.backend = new CpuBackend();
        // Several lanes call OpenBLAS at once: its own idle threads would spin against the lanes' workers.
        CpuNeuralBackend.setBlasThreads(1);
        int stageCount = b.stages;
        int instance = INSTANCES.incrementAndGet();
        CpuExecutor loadingLane = backend.forkExecutors(backend.rootExecutor(), 1).get(0);
        this.supervisor = system.systemActorOf(MaterializationSupervisor.create(new CpuParameterBackend(backend), loadingLane,
                MaterializationSettings.fromConfig(system.settings().config())), "graphlane-materialization-" + instance, Props.empty());
        StagePlan plan = StagePlan.balanced(config.layerCount(), stageCount);
        List<LlamaStage<CpuTensor>> loaded = new ArrayList<>();
        this.tensorParallelStages = b.tensorParallel > 1 ? loadTensorParallel(b, model, plan) : List.of();
        SupervisedWeightsLoader supervised = null;
        if (tensorParallelStages.isEmpty()) {
            // A stage's leases are all taken at once, so every shard may be pinned together.
            int shards = Math.max(CheckpointSource.DEFAULT_MAX_OPEN_SHARDS, model.checkpoint().catalog().shards().size());
            try (CheckpointSource source = model.openSource(shards)) {
                supervised = new SupervisedWeightsLoader(supervisor, system.scheduler(), source, config, b.loadTimeout);
                try {
                    for (StageSpec spec : plan.stages()) {
                        // Each stage gets its own ops: they keep scratch space and run on that stage's lane only.
                        loaded.add(new LlamaStage<>(config, supervised.load(spec), new CpuNeuralOps()));
                        b.progress.accept(spec);
                    }
                } catch (RuntimeException e) {
                    supervised.close();
                    throw e;
                }
            } catch (RuntimeException e) {
                closeQuietly();
                throw e;
            }
        }
        this.weights = supervised;
        this.stages = List.copyOf(loaded);
        List<String> laneNames = new ArrayList<>();
        for (int i = 0; i < stageCount; i++) {
            laneNames.add("stage-" + i);
        }
        this.lanes = LaneGroup.builder(system, backend).lanes(laneNames.toArray(String[]::new)).trace(b.trace)
                .workTracing(b.workTracing).spawn();
        this.program = new LlamaStageProgram<>(tensorParallelStages.isEmpty() ? stages : tensorParallelStages, body -> body::run);
        PipelineSettings settings = b.settings != null ? b.settings : PipelineSettings.defaults(stageCount);
        this.pipeline = Pipeline.start(system, lanes.registry(), lanes.laneIds(), program, settings, "pipeline-" + instance);
    }

    public static Builder builder() {
        return new Builder();
    }

    @Override
    public String modelName() {
        return name;
    }

    @Override
    public TokenCodec tokenizer() {
        return codec;
    }

    /** The model's configuration. */
    public LlamaConfig config() {
        return config;
    }

    /** The number of pipeline stages. */
    public int stageCount() {
        return lanes.laneIds().size();
    }

    /** The lanes of the stages, in order (their trace tracks are named after them). */
    public LaneGroup<CpuExecutor, CpuCompletion, CpuWork> lanes() {
        return lanes;
    }

    @Override
    public int maxSequenceLength() {
        return config.maxPositions();
    }

    @Override
    public Generation submit(GenerationRequest request, GenerationListener listener) {
        Objects.requireNonNull(request, "request");
        Objects.requireNonNull(listener, "listener");
        if (closed) {
            throw new GenerationRefusedException(GenerationRefusedException.Reason.UNAVAILABLE, "model " + name + " is shut down");
        }
        int[] prompt = PromptCheck.validPrompt(request, config);
        long deadline = request.timeout().map(t -> System.nanoTime() + t.toNanos()).orElse(Long.MAX_VALUE);
        TrackedGeneration tracked = new TrackedGeneration(request.promptIds(), listener);
        int eos = eosTokenIds.isEmpty() ? -1 : eosTokenIds.iterator().next();
        long id;
        try {
            id = pipeline.submit(new PipelineRequest(prompt, request.maxNewTokens(), eos, deadline, new Sampler(request.sampling())), tracked);
        } catch (PipelineOverloadedException e) {
            throw new GenerationRefusedException(GenerationRefusedException.Reason.OVERLOADED, e.getMessage());
        }
        return tracked.bind(id, pipeline::cancel);
    }

    /** Stops admitting, fails requests in flight, stops the lanes, frees weights and caches; idempotent. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            pipeline.stop(new GenerationRefusedException(GenerationRefusedException.Reason.UNAVAILABLE, "model " + name + " is shutting down"))
                    .toCompletableFuture().get(30, TimeUnit.SECONDS);
            lanes.stop().toCompletableFuture().get(60, TimeUnit.SECONDS);
        } catch (Exception e) {
            LOG.warn("stopping the pipeline of {} did not finish cleanly: {}", name, e.toString());
        }
        program.close();
        if (weights != null) {
            weights.close(); // after the lanes stopped: no work reads the weights any more
        }
        closeQuietly();
    }

    /** Loads every stage as {@code b.tensorParallel} shards on their own lanes (see the tensorparallel package). */
    private List<TensorParallelStage> loadTensorParallel(Builder b, ModelDirectory model, StagePlan plan) {
        try {
            return TensorParallelStages.load(model, plan, b.tensorParallel, backend, b.collectiveSettings, b.progress);
        } catch (RuntimeException e) {
            closeQuietly();
            throw e;
        }
    }

    private void closeQuietly() {
        supervisor.tell(new MaterializationSupervisor.Stop<>());
        backend.close();
        tokenizer.close();
        if (ownsSystem) {
            system.terminate();
        }
    }

    /** What {@link #build()} needs. */
    public static final class Builder {
        private Path model;
        private String modelName;
        private int stages = 1;
        private int tensorParallel = 1;
        private CollectiveSettings collectiveSettings = CollectiveSettings.defaults();
        private ActorSystem<?> system;
        private PipelineSettings settings;
        private TraceRecorder trace = TraceRecorder.DISABLED;
        private WorkTracing<CpuWork> workTracing = WorkTracing.none();
        private Consumer<StageSpec> progress = s -> { };
        private Duration loadTimeout = Duration.ofMinutes(10);

        /** A Hugging Face model directory (config.json, tokenizer.json, safetensors). */
        public Builder model(Path dir) {
            this.model = dir;
            return this;
        }

        /** The built-in demo model (written to its cache directory on first use). */
        public Builder demoModel() {
            this.model = null;
            this.modelName = "graphlane-demo";
            return this;
        }

        /** The number of pipeline stages (default 1). */
        public Builder stages(int count) {
            this.stages = count;
            return this;
        }

        /**
         * Tensor-parallel degree (default 1): each stage's layers split over {@code degree} shard lanes
         * that all-reduce after attention and after the MLP. It must divide the model's heads, kv heads
         * and intermediate width.
         */
        public Builder tensorParallel(int degree) {
            this.tensorParallel = degree;
            return this;
        }

        /** How the shards of a tensor-parallel stage wait for each other (default {@link CollectiveSettings#defaults()}). */
        public Builder collectiveSettings(CollectiveSettings settings) {
            this.collectiveSettings = Objects.requireNonNull(settings, "settings");
            return this;
        }

        /** Runs in an existing actor system instead of creating one. */
        public Builder actorSystem(ActorSystem<?> existing) {
            this.system = existing;
            return this;
        }

        /** Bounds of the pipeline engine (default {@link PipelineSettings#defaults}). */
        public Builder settings(PipelineSettings pipelineSettings) {
            this.settings = pipelineSettings;
            return this;
        }

        /** Records the lanes' events into {@code recorder}. */
        public Builder trace(TraceRecorder recorder) {
            this.trace = Objects.requireNonNull(recorder, "recorder");
            return this;
        }

        /** How stage work is instrumented so the trace shows when it really started on its lane. */
        public Builder workTracing(WorkTracing<CpuWork> tracing) {
            this.workTracing = Objects.requireNonNull(tracing, "tracing");
            return this;
        }

        /** How long the build waits for one stage's weights to be materialized and bound (default 10 minutes). */
        public Builder loadTimeout(Duration timeout) {
            Objects.requireNonNull(timeout, "timeout");
            if (timeout.isNegative() || timeout.isZero()) {
                throw new GraphlaneException("the load timeout must be positive, got " + timeout);
            }
            this.loadTimeout = timeout;
            return this;
        }

        /** Called once each stage's weights are loaded. */
        public Builder onStageLoaded(Consumer<StageSpec> listener) {
            this.progress = Objects.requireNonNull(listener, "listener");
            return this;
        }

        /**
         * Loads the model and starts the stages.
         *
         * @throws GraphlaneException naming the file, field or option at fault
         */
        public InferencePipeline build() {
            if (stages < 1) {
                throw new GraphlaneException("--stages must be >= 1, got " + stages);
            }
            if (tensorParallel < 1) {
                throw new GraphlaneException("--tensor-parallel must be >= 1, got " + tensorParallel);
            }
            Path dir = model != null ? model : DemoModel.ensure();
            ModelDirectory md = ModelDirectory.open(dir);
            new TensorParallelism(md.config(), tensorParallel);
            if (stages > md.config().layerCount()) {
                throw new GraphlaneException("--stages " + stages + " is more than the model's " + md.config().layerCount()
                        + " layers (num_hidden_layers in " + dir.resolve("config.json") + ")");
            }
            return new InferencePipeline(this, md);
        }
    }
}
