package io.graphlane.inference.pipeline;

import io.graphlane.actors.lane.LaneGroup;
import io.graphlane.actors.lane.WorkTracing;
import io.graphlane.actors.materialize.MaterializationSettings;
import io.graphlane.actors.materialize.MaterializationSupervisor;
import io.graphlane.backend.cpu.CpuWork;
import io.graphlane.checkpoint.CheckpointSource;
import io.graphlane.core.GraphlaneException;
import io.graphlane.core.completion.Completion;
import io.graphlane.core.graph.LaneId;
import io.graphlane.core.trace.TraceRecorder;
import io.graphlane.inference.api.Generation;
import io.graphlane.inference.api.GenerationListener;
import io.graphlane.inference.api.GenerationRefusedException;
import io.graphlane.inference.api.GenerationRequest;
import io.graphlane.inference.api.ServingStats;
import io.graphlane.inference.api.TextGenerator;
import io.graphlane.inference.api.TokenCodec;
import io.graphlane.inference.backend.CacheMemory;
import io.graphlane.inference.backend.CpuInference;
import io.graphlane.inference.backend.InferenceBackend;
import io.graphlane.inference.chat.ChatTemplate;
import io.graphlane.inference.demo.DemoModel;
import io.graphlane.inference.llama.LlamaConfig;
import io.graphlane.inference.llama.LlamaStage;
import io.graphlane.inference.llama.StageForward;
import io.graphlane.inference.llama.StageWeights;
import io.graphlane.inference.model.ModelDirectory;
import io.graphlane.inference.offload.WeightStreaming;
import io.graphlane.inference.sampling.GenerationDefaults;
import io.graphlane.inference.sampling.Sampler;
import io.graphlane.inference.stage.StagePlan;
import io.graphlane.inference.stage.StageSpec;
import io.graphlane.inference.tensorparallel.TensorParallelism;
import io.graphlane.inference.tokenizer.TextTokenizer;
import io.graphlane.inference.weights.SupervisedWeightsLoader;
import io.graphlane.inference.weights.WeightFormat;
import io.graphlane.scheduler.pipeline.Pipeline;
import io.graphlane.scheduler.pipeline.PipelineLoad;
import io.graphlane.scheduler.pipeline.KvBudget;
import io.graphlane.scheduler.pipeline.PipelineRequest;
import io.graphlane.scheduler.pipeline.PipelineSettings;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
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
 * into stages, each stage a lane owned by its lane actor, several requests moving through
 * the stages at once. The lanes, the neural ops and the weights come from one
 * {@link InferenceBackend}: the CPU by default ({@link CpuInference}), or a CUDA device with
 * {@code builder().backend(GpuInference.device(0))} (needs {@code graphlane-backend-gpu}). Each
 * stage's weights are loaded as one atomic unit through a {@link MaterializationSupervisor} on a
 * dedicated loading lane (settings under {@code graphlane.materialization}), and released at close
 * once the lanes have stopped.
 *
 * <p>Admission is by KV-cache memory ({@link KvBudget}): each request reserves its prompt plus its maximum of new
 * tokens, in positions, times what one position takes in every stage's caches as they are allocated (per layer a key
 * and a value row of {@code kv_heads × head_dim} F32 features; a tensor-parallel stage's shards each hold their share of
 * the heads). The budget is {@link Builder#kvBudget}, or by default {@link CacheMemory#DEFAULT_SHARE half} of the
 * memory the caches may still take once the weights are bound and the lanes are up
 * ({@link InferenceBackend#freeCacheMemory()}: on the CPU what JavaCPP still allows, by default up to the {@code -Xmx}
 * heap size, and what the operating system has available; on a GPU the device's free memory). A request that cannot
 * start waits in the engine's queue; one whose reservation is larger than the budget is refused as invalid, naming its
 * lengths and the budget. The embedding API:
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
    private final int[] eosIds;
    private final Optional<ChatTemplate> chatTemplate;
    private final GenerationDefaults generationDefaults;
    private final TextTokenizer tokenizer;
    private final TokenCodec codec;
    private final ActorSystem<?> system;
    private final boolean ownsSystem;
    private final InferenceBackend<?, ?, ?, ?, ?> backend;
    private final Stages<?, ?, ?, ?, ?> stages;
    private volatile boolean closed;

    private InferencePipeline(Builder b, ModelDirectory model, InferenceBackend<?, ?, ?, ?, ?> backend) {
        this.name = b.modelName != null ? b.modelName : model.name();
        this.config = model.config();
        this.eosTokenIds = model.eosTokenIds();
        this.eosIds = eosTokenIds.stream().mapToInt(Integer::intValue).toArray();
        this.chatTemplate = ChatTemplate.load(model.settingsDir());
        this.generationDefaults = GenerationDefaults.read(model.settingsDir());
        this.ownsSystem = b.system == null;
        this.system = b.system != null ? b.system : ActorSystem.create(Behaviors.empty(), "graphlane");
        this.tokenizer = model.tokenizer();
        this.codec = TokenCodec.of(tokenizer, eosTokenIds.isEmpty() ? -1 : eosTokenIds.iterator().next());
        this.backend = backend;
        try {
            this.stages = Stages.start(b, model, backend, system, INSTANCES.incrementAndGet());
        } catch (RuntimeException | Error e) {
            closeQuietly();
            throw e;
        }
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
        return stages.stageLanes.size();
    }

    /**
     * The lanes of the stages, stage by stage (their trace tracks are named after them): {@code stage-k}, or with
     * tensor parallelism {@code stage-k-shard-r} for each rank r.
     */
    public LaneGroup<?, ?, ?> lanes() {
        return stages.lanes;
    }

    /** The backend the stages run on ({@code cpu}, or a CUDA device's name). */
    public String backendDescription() {
        return backend.description();
    }

    @Override
    public int maxSequenceLength() {
        return config.maxPositions();
    }

    /** Unavailable once closed, or once its engine stopped after a failure of its own (logged when it happened). */
    @Override
    public java.util.Optional<String> unavailableReason() {
        if (closed) {
            return java.util.Optional.of("model " + name + " is shut down");
        }
        if (stages.pipeline.isStopped()) {
            return java.util.Optional.of("the pipeline engine of model " + name + " has stopped after an internal failure;"
                    + " restart the server");
        }
        return java.util.Optional.empty();
    }

    @Override
    public int maxHeldRequests() {
        return stages.pipeline.maxHeldRequests();
    }

    /** The KV-cache memory admission reserves against, and what one position of one request takes of it. */
    public KvBudget kvBudget() {
        return stages.pipeline.kvBudget();
    }

    /** Bytes of the KV-cache budget reserved now (running requests, and ended ones whose caches are not freed yet). */
    public long kvReservedBytes() {
        return stages.pipeline.kvReservedBytes();
    }

    /** Requests held now (generating and queued): an admission slot is freed when its request ends. */
    public int heldRequests() {
        return stages.pipeline.heldRequests();
    }

    /** The engine's counters (steps, tokens, active and queued requests). */
    public java.util.concurrent.CompletionStage<io.graphlane.scheduler.pipeline.PipelineEngine.Stats> engineStats() {
        return stages.pipeline.stats();
    }

    @Override
    public java.util.OptionalInt vocabularySize() {
        return java.util.OptionalInt.of(config.vocabSize());
    }

    @Override
    public Set<Integer> eosTokenIds() {
        return eosTokenIds;
    }

    @Override
    public Optional<ChatTemplate> chatTemplate() {
        return chatTemplate;
    }

    @Override
    public GenerationDefaults generationDefaults() {
        return generationDefaults;
    }

    @Override
    public Generation submit(GenerationRequest request, GenerationListener listener) {
        Objects.requireNonNull(request, "request");
        Objects.requireNonNull(listener, "listener");
        String unavailable = unavailableReason().orElse(null);
        if (unavailable != null) {
            throw new GenerationRefusedException(GenerationRefusedException.Reason.UNAVAILABLE, unavailable);
        }
        int[] prompt = PromptCheck.validPrompt(request, config);
        Pipeline<?, ?> pipeline = stages.pipeline;
        PromptCheck.fitsKvBudget(prompt.length, request.maxNewTokens(), pipeline.kvBudget());
        long deadline = request.timeout().map(t -> System.nanoTime() + t.toNanos()).orElse(Long.MAX_VALUE);
        TrackedGeneration tracked = new TrackedGeneration(request.promptIds(), listener);
        long id = PromptCheck.admitted(() -> pipeline.submit(new PipelineRequest(prompt, request.maxNewTokens(), eosIds, deadline,
                new Sampler(request.sampling(), prompt)), tracked));
        return tracked.bind(id, pipeline::cancel);
    }

    /**
     * Requests running and waiting as the engine last published them, each stage's busy time and KV-cache positions, and
     * each stage lane's queue: volatile reads only, so a metrics scrape never waits for the engine or a lane.
     */
    @Override
    public Optional<ServingStats> servingStats() {
        PipelineLoad load = stages.pipeline.load();
        List<ServingStats.Stage> stageStats = new ArrayList<>();
        List<ServingStats.Lane> laneStats = new ArrayList<>();
        for (int k = 0; k < stages.stageLanes.size(); k++) {
            List<LaneId> ids = stages.stageLanes.get(k);
            String stage = ids.size() == 1 ? ids.get(0).name() : "stage-" + k;
            stageStats.add(new ServingStats.Stage(stage, stages.program.busyNanos(k), stages.program.kvCachePositions(k)));
            for (LaneId lane : ids) {
                var laneLoad = stages.lanes.load(lane);
                laneStats.add(new ServingStats.Lane(lane.name(), laneLoad.queued(), laneLoad.inFlight()));
            }
        }
        return Optional.of(new ServingStats(load.running(), load.waiting(), stageStats, laneStats));
    }

    /** Stops admitting, fails requests in flight, stops the lanes, frees weights and caches, then the backend; idempotent. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        stages.close(name);
        closeQuietly();
    }

    private void closeQuietly() {
        backend.close();
        tokenizer.close();
        if (ownsSystem) {
            system.terminate();
        }
    }

    /**
     * What runs on one backend: the materialization supervisor, the supervised weights, the stage lanes,
     * the Llama program and the pipeline engine. Typed by the backend's tensor, executor, completion, work
     * and parameter slot, so one code path serves every {@link InferenceBackend}.
     */
    private static final class Stages<T, E, C extends Completion, W, P> {
        private final ActorRef<MaterializationSupervisor.Command<P>> supervisor;
        /** The supervised weights of single-lane stages; null when the stages are tensor-parallel (each releases its shards through their loader). */
        private final SupervisedWeightsLoader<P, T> weights;
        private final LaneGroup<E, C, W> lanes;
        /** Per stage, its lanes: one, or one per tensor-parallel rank. */
        private final List<List<LaneId>> stageLanes;
        private final LlamaStageProgram<T, W> program;
        private final Pipeline<W, StageSlot<T>> pipeline;
        /** Each stage's expert lanes with {@code --expert-parallel} > 1, stopped after the stage lanes; else empty. */
        private final List<io.graphlane.inference.moe.ExpertParallelExperts> expertLanes;

        private Stages(ActorRef<MaterializationSupervisor.Command<P>> supervisor, SupervisedWeightsLoader<P, T> weights,
                       LaneGroup<E, C, W> lanes, List<List<LaneId>> stageLanes, LlamaStageProgram<T, W> program,
                       Pipeline<W, StageSlot<T>> pipeline, List<io.graphlane.inference.moe.ExpertParallelExperts> expertLanes) {
            this.expertLanes = expertLanes;
            this.supervisor = supervisor;
            this.weights = weights;
            this.lanes = lanes;
            this.stageLanes = stageLanes;
            this.program = program;
            this.pipeline = pipeline;
        }

        /**
         * Loads every stage's weights through a supervisor on a loading lane of {@code backend} (or, with
         * tensor parallelism, the shards), spawns one lane per stage and starts the engine. On failure,
         * everything started here is stopped or released again; the backend stays open for the caller.
         */
        static <T, E, C extends Completion, W, P> Stages<T, E, C, W, P> start(Builder b, ModelDirectory model,
                InferenceBackend<T, E, C, W, P> backend, ActorSystem<?> system, int instance) {
            LlamaConfig config = model.config();
            E loadingLane = backend.device().forkExecutors(backend.device().rootExecutor(), 1).get(0);
            ActorRef<MaterializationSupervisor.Command<P>> supervisor = system.systemActorOf(
                    backend.supervisor(loadingLane, MaterializationSettings.fromConfig(system.settings().config())),
                    "graphlane-materialization-" + instance, Props.empty());
            SupervisedWeightsLoader<P, T> supervised = null;
            LaneGroup<E, C, W> lanes = null;
            List<io.graphlane.inference.moe.ExpertParallelExperts> expertLanes = new ArrayList<>();
            try {
                StagePlan plan = StagePlan.balanced(config.layerCount(), b.stages);
                List<StageForward<T>> forwards = new ArrayList<>();
                List<StageWeights<T>> loaded = new ArrayList<>();
                if (b.tensorParallel > 1) {
                    forwards.addAll(backend.loadTensorParallel(supervisor, system.scheduler(), b.loadTimeout, model, plan,
                            b.tensorParallel, b.progress));
                } else {
                    // A stage's leases are all taken at once, so every shard may be pinned together.
                    int shards = Math.max(CheckpointSource.DEFAULT_MAX_OPEN_SHARDS, model.checkpoint().catalog().shards().size());
                    try (CheckpointSource source = model.openSource(shards)) {
                        supervised = new SupervisedWeightsLoader<>(supervisor, system.scheduler(), source, config, b.loadTimeout,
                                backend.weightSlots(), b.weights);
                        for (StageSpec spec : plan.stages()) {
                            loaded.add(supervised.load(spec));
                            b.progress.accept(spec);
                        }
                    }
                }
                // Under a device weights budget, a stage that streams layers also gets a transfer lane (docs/offload.md).
                WeightStreaming<T, E, C, W> streaming = b.deviceWeightsBudget == null ? null
                        : WeightStreaming.plan(loaded, b.deviceWeightsBudget, b.offloadLookahead, backend.layerTier(), backend.device());
                if (streaming != null) {
                    streaming.plan().describe().forEach(b.offloadReport);
                }
                // One lane per stage, or one per rank of a tensor-parallel stage: each owned by its lane actor.
                List<String> laneNames = new ArrayList<>();
                List<Integer> stageStart = new ArrayList<>();
                for (int i = 0; i < b.stages; i++) {
                    stageStart.add(laneNames.size());
                    for (int r = 0; r < b.tensorParallel; r++) {
                        laneNames.add(b.tensorParallel == 1 ? "stage-" + i : "stage-" + i + "-shard-" + r);
                    }
                    if (streaming != null && streaming.streams(i)) {
                        laneNames.add("stage-" + i + "-transfer");
                    }
                }
                stageStart.add(laneNames.size());
                backend.computeLanes(b.stages * b.tensorParallel);
                lanes = LaneGroup.builder(system, streaming != null ? streaming.submissions() : backend.device())
                        .lanes(laneNames.toArray(String[]::new)).trace(b.trace)
                        .workTracing(streaming != null ? streaming.tracing(backend.workTracing()) : backend.workTracing()).spawn();
                List<List<LaneId>> stageLanes = new ArrayList<>();
                for (int i = 0; i < b.stages; i++) {
                    stageLanes.add(List.copyOf(lanes.laneIds().subList(stageStart.get(i), stageStart.get(i + 1))));
                }
                for (int i = 0; i < loaded.size(); i++) {
                    // Each stage gets its lane's own ops: they keep scratch space (a cuBLAS handle) and run on that lane only.
                    LaneId lane = stageLanes.get(i).get(0);
                    io.graphlane.core.nn.NeuralOps<T> ops = backend.ops(lanes.executor(lane));
                    LlamaStage<T> stage = new LlamaStage<>(config, loaded.get(i), ops, expertBlock(b, config, ops, expertLanes));
                    forwards.add(streaming != null ? streaming.forward(i, stage) : stage);
                }
                LlamaStageProgram<T, W> program = new LlamaStageProgram<>(forwards, backend::work);
                PipelineSettings settings = b.settings != null ? b.settings : PipelineSettings.defaults(b.stages);
                if (streaming != null && streaming.plan().streams()) {
                    // One micro-batch at a time: each step streams every layer once for its whole batch, and no two steps'
                    // works interleave on a stage's lanes, so a stage holds at most lookahead + 1 promoted layers.
                    settings = settings.withMaxInFlightBatches(1);
                }
                settings = settings.withKvBudget(kvBudgetBytes(b, settings, backend, program));
                Pipeline<W, StageSlot<T>> pipeline = Pipeline.startMultiLane(system, lanes.registry(), stageLanes, program, settings,
                        "pipeline-" + instance);
                return new Stages<>(supervisor, supervised, lanes, stageLanes, program, pipeline, List.copyOf(expertLanes));
            } catch (RuntimeException | Error e) {
                if (lanes != null) {
                    stopLanes(lanes, "a pipeline that failed to start");
                }
                expertLanes.forEach(io.graphlane.inference.moe.ExpertParallelExperts::close);
                if (supervised != null) {
                    supervised.close(); // after the lanes stopped: nothing reads the weights
                }
                supervisor.tell(new MaterializationSupervisor.Stop<>());
                throw e;
            }
        }

        /**
         * The KV-cache budget: the builder's, else the settings', else {@link CacheMemory#defaultBudget} of what the
         * backend says the caches may still take, now that the weights are bound and the lanes are up (logged).
         */
        private static long kvBudgetBytes(Builder b, PipelineSettings settings, InferenceBackend<?, ?, ?, ?, ?> backend,
                                          LlamaStageProgram<?, ?> program) {
            if (b.kvBudget != null) {
                return b.kvBudget;
            }
            if (settings.hasKvBudget()) {
                return settings.kvBudgetBytes();
            }
            long free = backend.freeCacheMemory();
            long budget = CacheMemory.budget(free, b.kvMemoryFraction);
            long perPosition = program.kvBytesPerPosition();
            LOG.info("KV-cache budget {} ({} of the {} the caches may take on {}): {} positions at {} bytes per position",
                    CacheMemory.format(budget), b.kvMemoryFraction, CacheMemory.format(free), backend.description(),
                    perPosition == 0 ? "unbounded" : budget / perPosition, perPosition);
            return budget;
        }

        /** Stops the engine and the lanes, then frees the caches, the weights and the supervisor. */
        void close(String model) {
            try {
                pipeline.stop(new GenerationRefusedException(GenerationRefusedException.Reason.UNAVAILABLE, "model " + model
                        + " is shutting down")).toCompletableFuture().get(30, TimeUnit.SECONDS);
            } catch (Exception e) {
                LOG.warn("stopping the pipeline of {} did not finish cleanly: {}", model, e.toString());
            }
            stopLanes(lanes, model);
            expertLanes.forEach(io.graphlane.inference.moe.ExpertParallelExperts::close); // no stage work calls them any more
            program.close();
            if (weights != null) {
                weights.close(); // after the lanes stopped: no work reads the weights any more
            }
            supervisor.tell(new MaterializationSupervisor.Stop<>());
        }

        /**
         * With {@code --expert-parallel} E > 1, a sparse block over E expert lanes of its own for one stage (added to
         * {@code made}); else null (every expert on the stage's lane). Expert parallelism runs on the CPU backend.
         */
        @SuppressWarnings("unchecked")
        private static <T> io.graphlane.inference.llama.MoeBlock<T> expertBlock(Builder b, LlamaConfig config,
                io.graphlane.core.nn.NeuralOps<T> ops, List<io.graphlane.inference.moe.ExpertParallelExperts> made) {
            if (b.expertParallel <= 1) {
                return null;
            }
            if (!(ops instanceof io.graphlane.backend.cpu.nn.CpuNeuralOps cpu)) {
                throw new GraphlaneException("--expert-parallel " + b.expertParallel + " runs on the CPU backend only");
            }
            io.graphlane.inference.moe.ExpertParallelExperts experts = new io.graphlane.inference.moe.ExpertParallelExperts(config,
                    b.expertParallel);
            made.add(experts);
            return (io.graphlane.inference.llama.MoeBlock<T>) (Object) new io.graphlane.inference.llama.MoeBlock<>(cpu, config, experts);
        }

        private static void stopLanes(LaneGroup<?, ?, ?> lanes, String what) {
            try {
                lanes.stop().toCompletableFuture().get(60, TimeUnit.SECONDS);
            } catch (Exception e) {
                LOG.warn("stopping the lanes of {} did not finish cleanly: {}", what, e.toString());
            }
        }
    }

    /** What {@link #build()} needs. */
    public static final class Builder {
        private Path model;
        private String modelName;
        private int stages = 1;
        private int tensorParallel = 1;
        private int expertParallel = 1;
        private ActorSystem<?> system;
        private PipelineSettings settings;
        private TraceRecorder trace = TraceRecorder.DISABLED;
        private WorkTracing<CpuWork> workTracing;
        private InferenceBackend.Factory backend;
        private Consumer<StageSpec> progress = s -> { };
        private Duration loadTimeout = Duration.ofMinutes(10);
        private WeightFormat weights = WeightFormat.STORED;
        private Long kvBudget;
        private Long deviceWeightsBudget;
        private int offloadLookahead = 1;
        private Consumer<String> offloadReport = LOG::info;
        private double kvMemoryFraction = CacheMemory.DEFAULT_SHARE;
        private Integer maxPositions;

        /**
         * The longest sequence (prompt and generated tokens) allowed, in place of the model's ({@code max_position_embeddings},
         * or the context its rope scaling extends it to); transformers itself sets no limit.
         */
        public Builder maxPositions(int positions) {
            this.maxPositions = positions;
            return this;
        }

        /** A Hugging Face model directory (config.json, tokenizer.json, safetensors), a GGUF file, or a directory holding exactly one. */
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
         * whose partial projections are summed after attention and after the MLP by reduce works, each
         * ordered after every rank's partial work. It must divide the model's heads, kv heads and
         * intermediate width.
         */
        public Builder tensorParallel(int degree) {
            this.tensorParallel = degree;
            return this;
        }

        /**
         * Expert-parallel degree (default 1) of a mixture-of-experts model: each stage's sparse layers run over
         * {@code degree} expert lanes, each owning 1/degree of every layer's experts, token rows dispatched and combined by
         * all-to-alls (see docs/moe.md). It must divide the experts per layer; CPU backend only.
         */
        public Builder expertParallel(int degree) {
            this.expertParallel = degree;
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

        /**
         * The device the stages run on, opened (and owned) by {@link #build()}: by default the CPU
         * ({@link CpuInference}); {@code io.graphlane.inference.gpu.GpuInference.device(n)} runs them on
         * CUDA device n (with {@code graphlane-backend-gpu} on the class path). Tensor parallelism is CPU only.
         */
        public Builder backend(InferenceBackend.Factory factory) {
            this.backend = Objects.requireNonNull(factory, "factory");
            return this;
        }

        /** How CPU stage work is instrumented so the trace shows when it really started on its lane (the default backend only). */
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

        /**
         * How the weights are held once loaded (default {@link WeightFormat#STORED}: the checkpoint's dtype, so
         * F16/BF16 stay 16-bit on the CPU); 16-bit and 8-bit forms are CPU only and not tensor-parallel.
         */
        public Builder weights(WeightFormat format) {
            this.weights = Objects.requireNonNull(format, "format");
            return this;
        }

        /**
         * The KV-cache memory admission reserves against, in bytes (default: half of what the caches may still take once
         * the weights are bound, see the class comment). Each request reserves its prompt plus its maximum of new tokens
         * times what one position takes over every stage; one that does not fit waits for room, one larger than the whole
         * budget is refused.
         *
         * @throws GraphlaneException naming the option when {@code bytes} is not positive
         */
        public Builder kvBudget(long bytes) {
            if (bytes <= 0) {
                throw new GraphlaneException("--kv-budget must be a positive size (such as 512m or 4g), got " + bytes + " bytes");
            }
            this.kvBudget = bytes;
            return this;
        }

        /**
         * Holds at most {@code bytes} of weights on the device: the embedding, final norm and head, and as many decoder
         * layers as the plan keeps resident; the other layers stay in host memory and are promoted on each stage's
         * transfer lane before each use ({@code docs/offload.md}). Not with tensor parallelism.
         *
         * @throws GraphlaneException naming the option when {@code bytes} is not positive
         */
        public Builder deviceWeightsBudget(long bytes) {
            if (bytes <= 0) {
                throw new GraphlaneException("--device-weights-budget must be a positive size (such as 512m or 4g), got " + bytes + " bytes");
            }
            this.deviceWeightsBudget = bytes;
            return this;
        }

        /** How many streamed layers a transfer lane promotes ahead of the one computed (default 1). */
        public Builder offloadLookahead(int layers) {
            if (layers < 0) {
                throw new GraphlaneException("--offload-lookahead must be >= 0 layers, got " + layers);
            }
            this.offloadLookahead = layers;
            return this;
        }

        /** Where the offload plan's lines go at start (default: the log). */
        public Builder onOffloadPlan(Consumer<String> report) {
            this.offloadReport = Objects.requireNonNull(report, "report");
            return this;
        }

        /**
         * The share in (0, 1] of what the caches may still take once the weights are bound (on a GPU its free device
         * memory) that the default KV budget takes (default {@link CacheMemory#DEFAULT_SHARE}); ignored where
         * {@link #kvBudget} or the settings give a budget.
         *
         * @throws GraphlaneException naming {@code --kv-memory-fraction} when {@code share} is outside (0, 1]
         */
        public Builder kvMemoryFraction(double share) {
            CacheMemory.requireShare(share);
            this.kvMemoryFraction = share;
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
            weights.requireTensorParallel(tensorParallel);
            if (deviceWeightsBudget != null && tensorParallel > 1) {
                throw new GraphlaneException("--device-weights-budget streams whole layers of single-lane stages; it does not combine with"
                        + " --tensor-parallel " + tensorParallel + " (use one or the other)");
            }
            Path dir = model != null ? model : DemoModel.ensure();
            ModelDirectory md = ModelDirectory.open(dir);
            if (maxPositions != null) {
                md = md.withMaxPositions(maxPositions);
            }
            new TensorParallelism(md.config(), tensorParallel);
            if (expertParallel != 1) {
                io.graphlane.inference.moe.ExpertParallelExperts.requireFits(md.config(), expertParallel);
                if (backend != null) {
                    throw new GraphlaneException("--expert-parallel " + expertParallel + " runs on the CPU backend only");
                }
            }
            if (stages > md.config().layerCount()) {
                throw new GraphlaneException("--stages " + stages + " is more than the model's " + md.config().layerCount()
                        + " layers (num_hidden_layers in " + md.configFile() + ")");
            }
            if (backend != null && workTracing != null) {
                throw new GraphlaneException("workTracing instruments CPU work of the default backend; give it to the backend "
                        + "(CpuInference.factory(tracing)) instead of combining it with backend(...)");
            }
            InferenceBackend.Factory factory = backend != null ? backend
                    : CpuInference.factory(workTracing != null ? workTracing : WorkTracing.none());
            InferenceBackend<?, ?, ?, ?, ?> opened = factory.open();
            try {
                return new InferencePipeline(this, md, opened);
            } catch (RuntimeException | Error e) {
                opened.close(); // idempotent: the constructor may have closed it already
                throw e;
            }
        }
    }
}
