package io.graphlane.scheduler.example;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.actors.lane.LaneGroup;
import io.graphlane.backend.cpu.CpuBackend;
import io.graphlane.backend.cpu.CpuCompletion;
import io.graphlane.backend.cpu.CpuExecutor;
import io.graphlane.backend.cpu.CpuWork;
import io.graphlane.core.graph.LaneGraph;
import io.graphlane.scheduler.graph.GraphResult;
import io.graphlane.scheduler.graph.GraphRunner;
import io.graphlane.scheduler.graph.RequestState;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.junit.jupiter.api.Test;

/** The layer-underneath example of docs/embedding.md, compiled and run as written. */
class EmbeddingExampleTest {

    @Test
    void spawnLanesAndRunAGraph() throws Exception {
        ConcurrentLinkedQueue<String> ran = new ConcurrentLinkedQueue<>();

        // --- docs/embedding.md example begins ---
        ActorSystem<Void> system = ActorSystem.create(Behaviors.empty(), "app");
        try (CpuBackend backend = new CpuBackend()) {
            LaneGroup<CpuExecutor, CpuCompletion, CpuWork> lanes =
                    LaneGroup.builder(system, backend).lanes("load", "compute").spawn();
            LaneGraph<CpuWork> graph = LaneGraph.<CpuWork>builder()
                    .lane("load").lane("compute")
                    .node("read", "load", () -> ran.add("read"))
                    .node("matmul", "compute", () -> ran.add("matmul"), "read")
                    .node("write", "load", () -> ran.add("write"), "matmul")
                    .build();
            GraphResult result = new GraphRunner<>(lanes).run(graph).toCompletableFuture().get(30, TimeUnit.SECONDS);
            lanes.stop().toCompletableFuture().get(30, TimeUnit.SECONDS);
            // --- docs/embedding.md example ends ---

            assertEquals(RequestState.FINISHED, result.state());
            assertEquals(java.util.List.of("read", "matmul", "write"), java.util.List.copyOf(ran));
        } finally {
            system.terminate();
            assertTrue(system.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS) != null);
        }
    }
}
