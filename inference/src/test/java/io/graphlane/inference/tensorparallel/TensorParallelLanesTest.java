package io.graphlane.inference.tensorparallel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.actors.lane.LaneGroup;
import io.graphlane.backend.cpu.CpuBackend;
import io.graphlane.backend.cpu.CpuCompletion;
import io.graphlane.backend.cpu.CpuExecutor;
import io.graphlane.backend.cpu.CpuWork;
import io.graphlane.backend.cpu.nn.CpuTensor;
import io.graphlane.core.graph.LaneId;
import io.graphlane.core.trace.TraceBuffer;
import io.graphlane.core.trace.TraceEvent;
import io.graphlane.inference.api.GenerationRequest;
import io.graphlane.inference.api.GenerationResult;
import io.graphlane.inference.model.Fixture;
import io.graphlane.inference.model.ModelDirectory;
import io.graphlane.inference.pipeline.InferencePipeline;
import io.graphlane.inference.pipeline.LlamaStageProgram;
import io.graphlane.inference.sampling.Sampler;
import io.graphlane.inference.sampling.SamplingParams;
import io.graphlane.inference.stage.StagePlan;
import io.graphlane.scheduler.pipeline.EngineFinishReason;
import io.graphlane.scheduler.pipeline.EngineListener;
import io.graphlane.scheduler.pipeline.Pipeline;
import io.graphlane.scheduler.pipeline.PipelineRequest;
import io.graphlane.scheduler.pipeline.PipelineSettings;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Collectors;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * Tensor-parallel stages as lane works: every shard runs on its own lane through its lane actor, each reduce is a
 * work ordered after both ranks' partial works by their handles, a failed partial fails only its step, and every
 * step's buffers are freed exactly once.
 */
class TensorParallelLanesTest {
    private static final ActorTestKit TESTKIT = ActorTestKit.create();

    @AfterAll
    static void shutdown() {
        TESTKIT.shutdownTestKit();
    }

    @Test
    void shardWorksRunOnTheShardLanesOrderedByTheOtherShardsHandles() throws Exception {
        TraceBuffer trace = new TraceBuffer(1_000_000);
        try (InferencePipeline model = InferencePipeline.builder().model(Fixture.dir("")).stages(2).tensorParallel(2)
                .actorSystem(TESTKIT.system()).trace(trace).build()) {
            List<String> lanes = model.lanes().laneIds().stream().map(LaneId::name).toList();
            // One lane (and lane actor) per shard, and no stage lane besides them that would wait for the shards.
            assertEquals(List.of("stage-0-shard-0", "stage-0-shard-1", "stage-1-shard-0", "stage-1-shard-1"), lanes);
            Fixture.Prompt p = Fixture.prompts().get(0);
            GenerationResult result = model.generateAll(List.of(GenerationRequest.greedy(list(p.ids()), 16)), Duration.ofSeconds(60)).get(0);
            assertEquals(list(p.greedy16()), result.generatedIds());
        }
        List<TraceEvent> events = trace.events();
        for (String lane : List.of("stage-0-shard-0", "stage-0-shard-1", "stage-1-shard-0", "stage-1-shard-1")) {
            String other = lane.endsWith("0") ? lane.substring(0, lane.length() - 1) + "1" : lane.substring(0, lane.length() - 1) + "0";
            Set<String> works = events.stream().filter(e -> e.kind() == TraceEvent.Kind.WORK && e.lane().equals(lane))
                    .map(TraceEvent::handle).collect(Collectors.toSet());
            // Per step and stage each rank runs 2 × layers + 1 works; the fixture's stages have layers to reduce.
            assertTrue(works.size() >= 16 * 3, lane + " ran " + works.size() + " works");
            long waitsOnOther = events.stream().filter(e -> e.kind() == TraceEvent.Kind.WAIT && e.lane().equals(lane)
                    && e.related().contains(other)).map(TraceEvent::handle).distinct().count();
            // Every work but a step's first on the lane is ordered after the other rank's work of the phase before.
            assertTrue(waitsOnOther >= works.size() / 2, lane + ": " + waitsOnOther + " works ordered after " + other + " of "
                    + works.size());
        }
        // Stage 1's first works follow both ranks of stage 0: its hand-off covers every shard.
        assertTrue(events.stream().anyMatch(e -> e.kind() == TraceEvent.Kind.WAIT && e.lane().equals("stage-1-shard-0")
                && e.related().contains("stage-0-shard-1")));
    }

    @Test
    void aFailingShardPartialFailsItsStepAndReleasesEveryStepBufferOnce() throws Exception {
        ModelDirectory model = ModelDirectory.open(Fixture.dir(""));
        List<TensorParallelStage<CpuTensor>> stages = TensorParallelStages.load(model, StagePlan.balanced(model.config().layerCount(), 2),
                2, s -> { });
        CpuBackend backend = new CpuBackend();
        LaneGroup<CpuExecutor, CpuCompletion, CpuWork> lanes = LaneGroup.builder(TESTKIT.system(), backend)
                .lanes("s0-r0", "s0-r1", "s1-r0", "s1-r1").spawn();
        LlamaStageProgram<CpuTensor, CpuWork> program = new LlamaStageProgram<>(stages, body -> body::run);
        List<List<LaneId>> stageLanes = List.of(lanes.laneIds().subList(0, 2), lanes.laneIds().subList(2, 4));
        var pipeline = Pipeline.startMultiLane(TESTKIT.system(), lanes.registry(), stageLanes, program, PipelineSettings.defaults(2),
                "tp-failing-partial");
        try {
            AtomicBoolean armed = new AtomicBoolean(true);
            RuntimeException boom = new IllegalStateException("rank 1's MLP partial failed");
            stages.get(0).beforePartial = (rank, phase) -> {
                if (rank == 1 && phase == 1 && armed.compareAndSet(true, false)) {
                    throw boom;
                }
            };
            Fixture.Prompt p = Fixture.prompts().get(0);
            Listener failed = new Listener();
            pipeline.submit(greedy(p.ids()), failed);
            ExecutionException e = assertThrows(ExecutionException.class, () -> failed.ended.get(60, TimeUnit.SECONDS));
            assertTrue(causes(e.getCause(), boom), "the step failed for the partial's failure: " + e.getCause());
            assertTrue(failed.tokens.isEmpty());
            // The stage is not poisoned: the next request runs on the same shards and gets the reference tokens.
            Listener next = new Listener();
            pipeline.submit(greedy(p.ids()), next);
            assertEquals(EngineFinishReason.LENGTH, next.ended.get(60, TimeUnit.SECONDS));
            assertEquals(list(p.greedy16()), next.tokens);
            assertFalse(armed.get());
        } finally {
            pipeline.stop(new IllegalStateException("test over")).toCompletableFuture().get(30, TimeUnit.SECONDS);
            lanes.stop().toCompletableFuture().get(30, TimeUnit.SECONDS);
            for (TensorParallelStage<CpuTensor> stage : stages) {
                assertEquals(0, stage.stepsHeld(), "every step's buffers were freed once its works completed");
                assertEquals(0, stage.overReleases(), "no share of a step's buffers was released twice");
            }
            program.close();
            backend.close();
        }
    }

    private static PipelineRequest greedy(int[] prompt) {
        return new PipelineRequest(prompt, 16, -1, Long.MAX_VALUE, new Sampler(SamplingParams.GREEDY));
    }

    private static boolean causes(Throwable t, Throwable root) {
        for (Throwable c = t; c != null; c = c.getCause()) {
            if (c == root) {
                return true;
            }
        }
        return t instanceof io.graphlane.core.completion.PoisonedPreconditionException p && p.rootCause() == root;
    }

    /** One request's tokens and its end. */
    private static final class Listener implements EngineListener {
        final List<Integer> tokens = new CopyOnWriteArrayList<>();
        final CompletableFuture<EngineFinishReason> ended = new CompletableFuture<>();

        @Override
        public void onToken(int tokenId) {
            tokens.add(tokenId);
        }

        @Override
        public void onFinished(EngineFinishReason reason) {
            ended.complete(reason);
        }

        @Override
        public void onFailed(Throwable cause) {
            ended.completeExceptionally(cause);
        }
    }

    private static List<Integer> list(int[] a) {
        List<Integer> l = new ArrayList<>();
        for (int v : a) {
            l.add(v);
        }
        return l;
    }
}
