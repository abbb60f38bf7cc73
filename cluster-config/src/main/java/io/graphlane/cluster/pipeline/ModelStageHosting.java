package io.graphlane.cluster.pipeline;

import io.graphlane.actors.lane.LaneGroup;
import io.graphlane.actors.lane.LaneProtocol;
import io.graphlane.backend.cpu.CpuBackend;
import io.graphlane.backend.cpu.CpuCompletion;
import io.graphlane.backend.cpu.CpuExecutor;
import io.graphlane.backend.cpu.CpuWork;
import io.graphlane.backend.cpu.nn.CpuNeuralOps;
import io.graphlane.backend.cpu.nn.CpuTensor;
import io.graphlane.checkpoint.CheckpointSource;
import io.graphlane.backend.cpu.collective.CollectiveSettings;
import io.graphlane.cluster.ClusterConfigException;
import io.graphlane.cluster.HostedStages;
import io.graphlane.cluster.collective.ClusterCollectives;
import io.graphlane.cluster.LaneStageHosting;
import io.graphlane.cluster.StageHosting;
import io.graphlane.core.graph.LaneId;
import io.graphlane.inference.llama.LlamaConfig;
import io.graphlane.inference.llama.LlamaStage;
import io.graphlane.inference.weights.WeightFormat;
import io.graphlane.inference.model.ModelDirectory;
import io.graphlane.inference.stage.StagePlan;
import io.graphlane.inference.stage.StageSpec;
import io.graphlane.inference.tensorparallel.ShardWeights;
import io.graphlane.inference.tensorparallel.SupervisedShardLoader;
import io.graphlane.inference.tensorparallel.TensorParallelism;
import io.graphlane.actors.materialize.MaterializationSettings;
import io.graphlane.actors.materialize.MaterializationSupervisor;
import io.graphlane.backend.cpu.param.CpuParameter;
import io.graphlane.inference.backend.CpuInference;
import io.graphlane.inference.weights.SupervisedWeightsLoader;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Props;
import org.apache.pekko.actor.typed.receptionist.Receptionist;
import org.apache.pekko.cluster.typed.Cluster;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Hosts a node's share of a Llama-family model: loads the weights of exactly the stages its rank hosts (the
 * checkpoint source maps only the tensors those stages read), each stage as one atomic unit of a
 * {@link MaterializationSupervisor} on a loading lane (settings under {@code graphlane.materialization}; each lease
 * released on its realization's exact completion, the stage bound whole or not at all), as a pipeline inside one JVM
 * loads them; then starts one CPU lane per stage and the node's {@link StageHost}, and registers the host under
 * {@link StageKeys#host} for each hosted stage once its weights are bound. Loading runs on {@code loader}, never on
 * the caller's thread; the weights are released once, after the lanes stopped.
 *
 * <p>With tensor parallelism T &gt; 1 a node holds one shard of one stage ({@link io.graphlane.cluster.ParallelLayout}):
 * it reads only its shard's selections of the checkpoint (its heads of q/k/v, its columns of gate/up, its slices of o
 * and down) and starts two lanes, a compute lane and a collective lane ({@code <stage lane>-collective}), where its
 * steps run as {@link io.graphlane.inference.tensorparallel.CollectiveShard} plans them; it joins no collective group
 * on its own. Shards 1 and up register their
 * {@link ShardHost} under {@link StageKeys#shardHost}. Shard 0 starts the stage's {@link StageHost}, unregistered, and
 * its {@link StageLead}, which learns the shard hosts from the Receptionist and forms the stage into a fresh
 * collective group ({@code tp-stage-i-<uid>-<n>}, over the cluster) whenever it sees a complete set of them that is not
 * the one running: at startup, and again after a shard's node (shard 0's included) was replaced by a node started for
 * the same rank, with no restart of the other shards' nodes. The stage is registered once all its shards joined the
 * group. Stopping the node stops the lanes, then retires every group the shard joined and releases its weights, each
 * once.
 */
public final class ModelStageHosting implements StageHosting {
    private static final Logger LOG = LoggerFactory.getLogger(ModelStageHosting.class);

    /** How soon a failed formation of a tensor-parallel stage is tried again when no shard host changes meanwhile. */
    private static final Duration REFORM_RETRY = Duration.ofSeconds(5);
    /** How long one hosted stage's weights may take to be materialized and bound. */
    private static final Duration LOAD_TIMEOUT = Duration.ofMinutes(10);
    private static final AtomicInteger SUPERVISORS = new AtomicInteger();

    private final Path modelDir;
    private final int stageCount;
    private final int tensorParallel;
    private final Executor loader;
    private final WeightFormat weights;
    private final StepCounters counters = new StepCounters();

    /** Hosting of {@code modelDir} split into {@code stageCount} stages, loading on {@code loader}. */
    public ModelStageHosting(Path modelDir, int stageCount, Executor loader) {
        this(modelDir, stageCount, 1, loader);
    }

    /**
     * Hosting of {@code modelDir} split into {@code stageCount} stages of {@code tensorParallel} shards each (the
     * layout of {@link io.graphlane.cluster.ParallelLayout}), loading on {@code loader}.
     */
    public ModelStageHosting(Path modelDir, int stageCount, int tensorParallel, Executor loader) {
        this(modelDir, stageCount, tensorParallel, loader, WeightFormat.F32);
    }

    /** As above, with the weights of single-shard stages held in {@code weights} (tensor-parallel shards hold F32). */
    public ModelStageHosting(Path modelDir, int stageCount, int tensorParallel, Executor loader, WeightFormat weights) {
        if (tensorParallel < 1) {
            throw new ClusterConfigException("--tensor-parallel must be >= 1, got " + tensorParallel);
        }
        this.modelDir = modelDir;
        this.stageCount = stageCount;
        this.tensorParallel = tensorParallel;
        this.loader = loader;
        this.weights = java.util.Objects.requireNonNull(weights, "weights");
    }

    /** The steps this node's stage host has run so far, and how many requests' rows they carried. */
    public StepCounters stepCounters() {
        return counters;
    }

    @Override
    public CompletionStage<HostedStages> host(ActorSystem<?> system, int rank, List<Integer> stages) {
        if (stages.isEmpty()) {
            return CompletableFuture.completedFuture(new HostedStages(Map.of(), CompletableFuture.completedFuture(null),
                    () -> CompletableFuture.completedFuture(null)));
        }
        if (tensorParallel > 1) {
            if (stages.size() != 1) {
                throw new ClusterConfigException("with --tensor-parallel " + tensorParallel + " a node holds one shard of one stage,"
                        + " but rank " + rank + " was given stages " + stages);
            }
            int stage = stages.get(0);
            int shard = rank % tensorParallel;
            return CompletableFuture.supplyAsync(() -> loadShard(system, stage, shard), loader)
                    .thenApply(loaded -> startShard(system, loaded));
        }
        return CompletableFuture.supplyAsync(() -> start(system, stages), loader);
    }

    /**
     * One shard's weights, bound as one atomic unit of a materialization supervisor on a loading lane of the shard's
     * CPU backend, before its lane and group exist; {@link #close} releases them through their loader, then stops
     * the supervisor and the backend.
     */
    private record LoadedShard(LlamaConfig config, TensorParallelism tp, StageSpec spec, ShardWeights<CpuTensor> weights,
                               SupervisedShardLoader<CpuParameter, CpuTensor> shardLoader,
                               ActorRef<MaterializationSupervisor.Command<CpuParameter>> supervisor, CpuInference cpu) {
        int shard() {
            return weights.rank();
        }

        /** Releases what the loader still holds (the weights, unless released already), then the supervisor and the backend. */
        void close() {
            shardLoader.close();
            supervisor.tell(new MaterializationSupervisor.Stop<>());
            cpu.close();
        }
    }

    private LoadedShard loadShard(ActorSystem<?> system, int stage, int shard) {
        ModelDirectory model = ModelDirectory.open(modelDir);
        TensorParallelism tp = new TensorParallelism(model.config(), tensorParallel);
        StageSpec spec = StagePlan.balanced(model.config().layerCount(), stageCount).stage(stage);
        CpuInference cpu = new CpuInference();
        // The shard's weights are one atomic unit of a supervisor on a loading lane, as a whole stage's are.
        ActorRef<MaterializationSupervisor.Command<CpuParameter>> supervisor = spawnSupervisor(system, cpu, "shard-materialization-");
        SupervisedShardLoader<CpuParameter, CpuTensor> shardLoader = null;
        // A shard's leases are all taken at once, so every shard of the checkpoint may be pinned together.
        int maxOpen = Math.max(CheckpointSource.DEFAULT_MAX_OPEN_SHARDS, model.checkpoint().catalog().shards().size());
        try (CheckpointSource source = model.openSource(maxOpen)) {
            shardLoader = new SupervisedShardLoader<>(supervisor, system.scheduler(), source, tp, LOAD_TIMEOUT, cpu.weightSlots());
            ShardWeights<CpuTensor> weights = shardLoader.load(spec, shard);
            LOG.info("shard {} of {} of stage {} of {} loaded: layers {}", shard, tensorParallel, stage, stageCount, spec.layers());
            return new LoadedShard(model.config(), tp, spec, weights, shardLoader, supervisor, cpu);
        } catch (RuntimeException | Error e) {
            if (shardLoader != null) {
                shardLoader.close();
            }
            supervisor.tell(new MaterializationSupervisor.Stop<>());
            cpu.close();
            throw e;
        }
    }

    private HostedStages startShard(ActorSystem<?> system, LoadedShard loaded) {
        int stage = loaded.spec().index();
        int rank = loaded.shard();
        CollectiveSettings settings = CollectiveSettings.defaults();
        NodeShardGroups generations = new NodeShardGroups(loaded.tp(), rank, loaded.weights(), loaded.shardLoader()::release,
                settings, group -> ClusterCollectives.join(system, group, rank, tensorParallel, settings));
        CpuBackend backend = loaded.cpu().device();
        String laneName = LaneStageHosting.laneName(stage);
        String collectiveName = laneName + "-collective";
        LaneGroup<CpuExecutor, CpuCompletion, CpuWork> lanes;
        try {
            // A compute lane and a collective lane, as a GPU runs a compute stream and a collective stream.
            lanes = LaneGroup.builder(system, backend).lanes(laneName, collectiveName).spawn();
        } catch (RuntimeException e) {
            generations.closeAll();
            loaded.close();
            throw e;
        }
        LaneId lane = new LaneId(laneName);
        LaneId collectiveLane = new LaneId(collectiveName);
        // The lanes have finished their work first: nothing reads the caches or weights any more.
        Supplier<CompletionStage<Void>> stop = () -> lanes.stop().thenCompose(stopped -> generations.closeAll()).thenRun(loaded::close);
        try {
            String node = Cluster.get(system).selfMember().address().toString();
            if (rank > 0) {
                String name = "shard " + rank + " of stage " + stage + " on " + node;
                ActorRef<ShardHost.Command> host = HostSupervision.spawn(system, ShardHost.create(generations, lane, collectiveLane, lanes.registry(),
                        name), "shard-host", "the shard host of " + name);
                system.receptionist().tell(Receptionist.register(StageKeys.shardHost(stage, rank), host));
                return new HostedStages(Map.of(), CompletableFuture.completedFuture(null), stop);
            }
            ActorRef<StageHost.Command> host = HostSupervision.spawn(system, StageHost.create(Map.of(), Map.of(stage,
                    "tensor-parallel stage " + stage + " on " + node + " has not formed yet: it waits for the hosts of its "
                    + tensorParallel + " shards"), lanes.registry(), node, counters), "stage-host",
                    "the stage host of stage " + stage + " on " + node);
            String uid = Long.toUnsignedString(Cluster.get(system).selfMember().uniqueAddress().longUid());
            StageLead.StageShape shape = new StageLead.StageShape(stage, tensorParallel, loaded.config(), loaded.spec().isLast(), lane,
                    collectiveLane);
            system.systemActorOf(StageLead.create(shape, generations, host, uid, REFORM_RETRY), "stage-lead", Props.empty());
            return new HostedStages(Map.of(stage, lanes.lane(laneName)), CompletableFuture.completedFuture(null), stop);
        } catch (RuntimeException e) {
            stop.get();
            throw e;
        }
    }

    /** A materialization supervisor over {@code cpu}'s parameter backend, realizing on a loading lane of its own. */
    private static ActorRef<MaterializationSupervisor.Command<CpuParameter>> spawnSupervisor(ActorSystem<?> system, CpuInference cpu,
                                                                                        String namePrefix) {
        CpuBackend backend = cpu.device();
        CpuExecutor loadingLane = backend.forkExecutors(backend.rootExecutor(), 1).get(0);
        return system.systemActorOf(cpu.supervisor(loadingLane, MaterializationSettings.fromConfig(system.settings().config())),
                namePrefix + SUPERVISORS.incrementAndGet(), Props.empty());
    }

    private HostedStages start(ActorSystem<?> system, List<Integer> stages) {
        ModelDirectory model = ModelDirectory.open(modelDir);
        StagePlan plan = StagePlan.balanced(model.config().layerCount(), stageCount);
        CpuInference cpu = new CpuInference();
        CpuBackend backend = cpu.device();
        // Each hosted stage's weights are one atomic unit of a supervisor on a loading lane, as in a pipeline inside one JVM.
        ActorRef<MaterializationSupervisor.Command<CpuParameter>> supervisor = spawnSupervisor(system, cpu, "stage-materialization-");
        Map<Integer, LlamaStage<CpuTensor>> loaded = new LinkedHashMap<>();
        SupervisedWeightsLoader<CpuParameter, CpuTensor> weights = null;
        LaneGroup<CpuExecutor, CpuCompletion, CpuWork> lanes = null;
        try {
            // A stage's leases are all taken at once, so every shard of the checkpoint may be pinned together.
            int shards = Math.max(CheckpointSource.DEFAULT_MAX_OPEN_SHARDS, model.checkpoint().catalog().shards().size());
            try (CheckpointSource source = model.openSource(shards)) {
                weights = new SupervisedWeightsLoader<>(supervisor, system.scheduler(), source, model.config(), LOAD_TIMEOUT,
                        cpu.weightSlots(), this.weights);
                for (int s : stages) {
                    loaded.put(s, new LlamaStage<>(model.config(), weights.load(plan.stage(s)), new CpuNeuralOps()));
                    LOG.info("stage {} of {} loaded: layers {}", s, stageCount, plan.stage(s).layers());
                }
            }
            lanes = LaneGroup.builder(system, backend).lanes(stages.stream().map(LaneStageHosting::laneName).toArray(String[]::new)).spawn();
        } catch (RuntimeException | Error e) {
            if (weights != null) {
                weights.close(); // no lane ran: nothing reads them
            }
            supervisor.tell(new MaterializationSupervisor.Stop<>());
            cpu.close();
            throw e;
        }
        Map<Integer, StageHost.HostedStage> hosted = new LinkedHashMap<>();
        Map<Integer, ActorRef<LaneProtocol.Command>> laneRefs = new LinkedHashMap<>();
        for (int s : stages) {
            hosted.put(s, new StageHost.HostedStage(loaded.get(s), new LaneId(LaneStageHosting.laneName(s))));
            laneRefs.put(s, lanes.lane(LaneStageHosting.laneName(s)));
        }
        String node = Cluster.get(system).selfMember().address().toString();
        ActorRef<StageHost.Command> host = HostSupervision.spawn(system, StageHost.create(hosted, Map.of(), lanes.registry(), node,
                counters), "stage-host", "the stage host of stages " + stages + " on " + node);
        for (int s : stages) {
            system.receptionist().tell(Receptionist.register(StageKeys.host(s), host));
        }
        List<LlamaStage<CpuTensor>> all = new ArrayList<>(loaded.values());
        SupervisedWeightsLoader<CpuParameter, CpuTensor> bound = weights;
        LaneGroup<CpuExecutor, CpuCompletion, CpuWork> running = lanes;
        return new HostedStages(laneRefs, CompletableFuture.completedFuture(null), () -> running.stop().thenRun(() -> {
            // The lanes have finished their work: nothing reads the caches or weights any more.
            all.forEach(LlamaStage::close);
            bound.close();
            supervisor.tell(new MaterializationSupervisor.Stop<>());
            cpu.close();
        }));
    }
}
