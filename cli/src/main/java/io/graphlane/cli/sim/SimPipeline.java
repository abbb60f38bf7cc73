package io.graphlane.cli.sim;

import io.graphlane.actors.lane.LaneGroup;
import io.graphlane.core.trace.TraceRecorder;
import io.graphlane.scheduler.pipeline.EngineFinishReason;
import io.graphlane.scheduler.pipeline.EngineListener;
import io.graphlane.scheduler.pipeline.Pipeline;
import io.graphlane.scheduler.pipeline.PipelineRequest;
import io.graphlane.scheduler.pipeline.PipelineSettings;
import io.graphlane.testkit.sim.SimBackend;
import io.graphlane.testkit.sim.SimCompletion;
import io.graphlane.testkit.sim.SimExecutor;
import io.graphlane.testkit.sim.SimWork;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
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
        this.system = ActorSystem.create(Behaviors.empty(), "graphlane-sim");
        this.backend = SimBackend.create();
        List<String> names = new ArrayList<>();
        for (int i = 0; i < program.stageCount(); i++) {
            names.add("stage-" + i);
        }
        this.lanes = LaneGroup.builder(system, backend).lanes(names.toArray(String[]::new)).trace(trace).spawn();
        this.pipeline = Pipeline.start(system, lanes.registry(), lanes.laneIds(), program, settings, "sim-pipeline-" + NAMES.incrementAndGet());
    }

    /** Runs every prompt at once, generating {@code newTokens} each, and waits for all. */
    public List<Result> runAll(List<int[]> prompts, int newTokens) throws Exception {
        List<CompletableFuture<Result>> futures = new ArrayList<>();
        for (int[] prompt : prompts) {
            CompletableFuture<Result> f = new CompletableFuture<>();
            List<Integer> tokens = new ArrayList<>();
            pipeline.submit(new PipelineRequest(prompt, newTokens, -1, Long.MAX_VALUE, null), new EngineListener() {
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
            futures.add(f);
        }
        CompletableFuture.allOf(futures.toArray(CompletableFuture[]::new)).get(10, TimeUnit.MINUTES);
        List<Result> out = new ArrayList<>();
        futures.forEach(f -> out.add(f.join()));
        return out;
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
