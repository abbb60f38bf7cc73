package io.graphlane.cluster.pipeline;

import io.graphlane.actors.lane.LaneGroup;
import io.graphlane.actors.lane.LaneProtocol;
import io.graphlane.backend.cpu.CpuBackend;
import io.graphlane.backend.cpu.CpuCompletion;
import io.graphlane.backend.cpu.CpuExecutor;
import io.graphlane.backend.cpu.CpuWork;
import io.graphlane.backend.cpu.nn.CpuNeuralBackend;
import io.graphlane.backend.cpu.nn.CpuNeuralOps;
import io.graphlane.backend.cpu.nn.CpuTensor;
import io.graphlane.checkpoint.CheckpointSource;
import io.graphlane.cluster.HostedStages;
import io.graphlane.cluster.LaneStageHosting;
import io.graphlane.cluster.StageHosting;
import io.graphlane.core.graph.LaneId;
import io.graphlane.inference.llama.LlamaStage;
import io.graphlane.inference.model.CpuModels;
import io.graphlane.inference.model.ModelDirectory;
import io.graphlane.inference.stage.StagePlan;
import io.graphlane.inference.weights.StageWeightsAssembly;
import io.graphlane.inference.weights.StageWeightsLoader;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Props;
import org.apache.pekko.actor.typed.receptionist.Receptionist;
import org.apache.pekko.cluster.typed.Cluster;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Hosts a node's share of a Llama-family model: loads the weights of exactly the stages its rank hosts (the
 * checkpoint source maps only the tensors those stages read), starts one CPU lane per stage and the node's
 * {@link StageHost}, and registers the host under {@link StageHostKeys#stage} for each hosted stage once its weights
 * are bound. Loading runs on {@code loader}, never on the caller's thread.
 */
public final class ModelStageHosting implements StageHosting {
    private static final Logger LOG = LoggerFactory.getLogger(ModelStageHosting.class);

    private final Path modelDir;
    private final int stageCount;
    private final Executor loader;

    /** Hosting of {@code modelDir} split into {@code stageCount} stages, loading on {@code loader}. */
    public ModelStageHosting(Path modelDir, int stageCount, Executor loader) {
        this.modelDir = modelDir;
        this.stageCount = stageCount;
        this.loader = loader;
    }

    @Override
    public CompletionStage<HostedStages> host(ActorSystem<?> system, int rank, List<Integer> stages) {
        if (stages.isEmpty()) {
            return CompletableFuture.completedFuture(new HostedStages(Map.of(), CompletableFuture.completedFuture(null),
                    () -> CompletableFuture.completedFuture(null)));
        }
        return CompletableFuture.supplyAsync(() -> start(system, stages), loader);
    }

    private HostedStages start(ActorSystem<?> system, List<Integer> stages) {
        ModelDirectory model = ModelDirectory.open(modelDir);
        StagePlan plan = StagePlan.balanced(model.config().layerCount(), stageCount);
        CpuNeuralOps loadOps = new CpuNeuralOps();
        CpuNeuralBackend.setBlasThreads(1);
        Map<Integer, LlamaStage<CpuTensor>> loaded = new LinkedHashMap<>();
        try (CheckpointSource source = model.openSource(CheckpointSource.DEFAULT_MAX_OPEN_SHARDS)) {
            StageWeightsLoader<CpuTensor> weights = CpuModels.loader(model, source, loadOps);
            for (int s : stages) {
                loaded.put(s, new LlamaStage<>(model.config(), weights.load(plan.stage(s)), new CpuNeuralOps()));
                LOG.info("stage {} of {} loaded: layers {}", s, stageCount, plan.stage(s).layers());
            }
        } catch (RuntimeException e) {
            loaded.values().forEach(st -> StageWeightsAssembly.release(st.weights(), loadOps));
            throw e;
        }
        CpuBackend backend = new CpuBackend();
        LaneGroup<CpuExecutor, CpuCompletion, CpuWork> lanes = LaneGroup.builder(system, backend)
                .lanes(stages.stream().map(LaneStageHosting::laneName).toArray(String[]::new)).spawn();
        Map<Integer, StageHost.HostedStage> hosted = new LinkedHashMap<>();
        Map<Integer, ActorRef<LaneProtocol.Command>> laneRefs = new LinkedHashMap<>();
        for (int s : stages) {
            hosted.put(s, new StageHost.HostedStage(loaded.get(s), new LaneId(LaneStageHosting.laneName(s))));
            laneRefs.put(s, lanes.lane(LaneStageHosting.laneName(s)));
        }
        String node = Cluster.get(system).selfMember().address().toString();
        ActorRef<StageHost.Command> host = system.systemActorOf(StageHost.create(hosted, lanes.registry(), node), "stage-host",
                Props.empty());
        for (int s : stages) {
            system.receptionist().tell(Receptionist.register(StageHostKeys.stage(s), host));
        }
        List<LlamaStage<CpuTensor>> all = new ArrayList<>(loaded.values());
        return new HostedStages(laneRefs, CompletableFuture.completedFuture(null), () -> lanes.stop().thenRun(() -> {
            // The lanes have finished their work: nothing reads the caches or weights any more.
            all.forEach(st -> {
                st.close();
                StageWeightsAssembly.release(st.weights(), loadOps);
            });
            backend.close();
        }));
    }
}
