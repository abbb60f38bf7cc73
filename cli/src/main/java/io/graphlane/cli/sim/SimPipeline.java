package io.graphlane.cli.sim;

import io.graphlane.actors.lane.LaneGroup;
import io.graphlane.core.backend.SubmissionBackend;
import io.graphlane.core.graph.LaneId;
import io.graphlane.core.trace.TraceRecorder;
import io.graphlane.scheduler.pipeline.EngineFinishReason;
import io.graphlane.scheduler.pipeline.EngineListener;
import io.graphlane.scheduler.pipeline.Pipeline;
import io.graphlane.scheduler.pipeline.PipelineRequest;
import io.graphlane.scheduler.pipeline.PipelineSettings;
import io.graphlane.scheduler.pipeline.StageProgram;
import io.graphlane.testkit.sim.SimBackend;
import io.graphlane.testkit.sim.SimCompletion;
import io.graphlane.testkit.sim.SimExecutor;
import io.graphlane.testkit.sim.SimWork;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;

/** The pipeline engine over stage lanes of the simulated device, in its own actor system. */
public final class SimPipeline implements AutoCloseable {
    private static final AtomicInteger NAMES = new AtomicInteger();

    /** One finished request: its generated tokens. */
    public record Result(int[] prompt, List<Integer> tokens) {
    }

    private final ActorSystem<Void> system;
    private final SimBackend backend;
    private final LaneGroup<SimExecutor, SimCompletion, SimWork> lanes;
    private final Pipeline<SimWork, Object> pipeline;

    public SimPipeline(SimStageProgram program, PipelineSettings settings, TraceRecorder trace) {
        this(program, SimBackend.create(), b -> b, settings, trace);
    }

    /**
     * The engine over {@code program} on {@code backend}, which this pipeline owns and closes: one lane per stage lane
     * of the program ({@code stage-k}, then {@code stage-k-1}, ...), each submitting through {@code submissions} of the
     * backend (the backend itself, or an adapter over it).
     */
    public SimPipeline(StageProgram<SimWork, Object> program, SimBackend backend,
                       Function<SimBackend, SubmissionBackend<SimExecutor, SimCompletion, SimWork>> submissions,
                       PipelineSettings settings, TraceRecorder trace) {
        this.system = ActorSystem.create(Behaviors.empty(), "graphlane-sim");
        this.backend = backend;
        List<String> names = new ArrayList<>();
        List<List<Integer>> byStage = new ArrayList<>();
        for (int i = 0; i < program.stageCount(); i++) {
            List<Integer> indices = new ArrayList<>();
            for (int j = 0; j < program.laneCount(i); j++) {
                indices.add(names.size());
                names.add(j == 0 ? "stage-" + i : "stage-" + i + "-" + j);
            }
            byStage.add(indices);
        }
        this.lanes = LaneGroup.builder(system, submissions.apply(backend)).lanes(names.toArray(String[]::new)).trace(trace).spawn();
        List<List<LaneId>> stageLanes = new ArrayList<>();
        for (List<Integer> indices : byStage) {
            stageLanes.add(indices.stream().map(lanes.laneIds()::get).toList());
        }
        this.pipeline = Pipeline.startMultiLane(system, lanes.registry(), stageLanes, program, settings,
                "sim-pipeline-" + NAMES.incrementAndGet());
    }

    /** One request started: its id in the engine and its result, failed with the cause if it failed. */
    public record Started(long id, CompletableFuture<Result> result) {
    }

    /** Starts {@code prompt}, generating {@code newTokens}. */
    public Started start(int[] prompt, int newTokens) {
        CompletableFuture<Result> f = new CompletableFuture<>();
        List<Integer> tokens = new ArrayList<>();
        long id = pipeline.submit(new PipelineRequest(prompt, newTokens, -1, Long.MAX_VALUE, null), new EngineListener() {
            @Override
            public void onToken(int tokenId) {
                tokens.add(tokenId);
            }

            @Override
            public void onFinished(EngineFinishReason reason) {
                f.complete(new Result(prompt, List.copyOf(tokens)));
            }

            @Override
            public void onFailed(Throwable cause) {
                f.completeExceptionally(cause);
            }
        });
        return new Started(id, f);
    }

    /** Runs every prompt at once, generating {@code newTokens} each, and waits for all. */
    public List<Result> runAll(List<int[]> prompts, int newTokens) throws Exception {
        List<CompletableFuture<Result>> futures = new ArrayList<>();
        for (int[] prompt : prompts) {
            futures.add(start(prompt, newTokens).result());
        }
        CompletableFuture.allOf(futures.toArray(CompletableFuture[]::new)).get(10, TimeUnit.MINUTES);
        List<Result> out = new ArrayList<>();
        futures.forEach(f -> out.add(f.join()));
        return out;
    }

    /** The engine. */
    public Pipeline<SimWork, Object> pipeline() {
        return pipeline;
    }

    @Override
    public void close() throws Exception {
        pipeline.stop(new IllegalStateException("closing")).toCompletableFuture().get(30, TimeUnit.SECONDS);
        lanes.stop().toCompletableFuture().get(30, TimeUnit.SECONDS);
        backend.close();
        system.terminate();
        system.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
    }
}
