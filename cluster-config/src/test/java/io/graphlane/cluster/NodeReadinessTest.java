package io.graphlane.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.backend.cpu.CpuBackend;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Readiness over Pekko Management: ready only once the node's lanes are up and its weights are bound; a node not ready
 * or not alive answers 503 with Retry-After and the failing check's reason.
 */
class NodeReadinessTest {

    @Test
    void readyOnlyAfterLanesAreUpAndWeightsAreBoundAndNotAliveAfterAFatalFailure() throws Exception {
        CompletableFuture<Void> weights = new CompletableFuture<>();
        LaneStageHosting<?, ?, ?> lanes = new LaneStageHosting<>(new CpuBackend());
        StageHosting withWeights = (system, rank, stages) -> lanes.host(system, rank, stages)
                .thenApply(h -> new HostedStages(h.lanes(), weights, h.stop()));
        NodeSettings settings = TestNodes.localCluster(1).get(0);
        GraphlaneNode node = GraphlaneNode.start(settings, TestNodes.base(), 2, withWeights);
        int port = settings.managementPort();
        try {
            NodeIdentity id = node.hosted().toCompletableFuture().get(30, TimeUnit.SECONDS);
            assertEquals(0, id.rank());
            assertEquals(List.of(0, 1), id.stages(), "one node hosts every stage");

            // Lanes are up but the weights are not bound: not ready, for as long as the weights are pending.
            assertFalse(node.readiness().isReady());
            java.net.http.HttpResponse<String> notReady = TestNodes.get(port, "/ready");
            assertEquals(503, notReady.statusCode());
            assertEquals("5", notReady.headers().firstValue("Retry-After").orElseThrow());
            assertEquals("the weights of the node's stages are not bound yet", notReady.body(), "says why");
            assertEquals(200, TestNodes.get(port, "/alive").statusCode());

            weights.complete(null);
            TestNodes.awaitCondition("readiness after the weights are bound", Duration.ofSeconds(10),
                    () -> TestNodes.get(port, "/ready").statusCode() == 200);
            assertTrue(node.readiness().isReady());

            // On a serving node readiness also follows the pipeline: not ready while a stage has no reachable host.
            java.util.concurrent.atomic.AtomicBoolean pipelineAvailable = new java.util.concurrent.atomic.AtomicBoolean(false);
            node.readiness().requireServing(pipelineAvailable::get);
            assertEquals(503, TestNodes.get(port, "/ready").statusCode());
            pipelineAvailable.set(true);
            assertEquals(200, TestNodes.get(port, "/ready").statusCode());

            node.readiness().markFailed(new IllegalStateException("stage 1 lane stopped"));
            assertEquals(503, TestNodes.get(port, "/ready").statusCode());
            assertEquals(503, TestNodes.get(port, "/alive").statusCode());
        } finally {
            node.shutdown().toCompletableFuture().get(30, TimeUnit.SECONDS);
        }
    }

    @Test
    void failingToBindWeightsLeavesTheNodeNotReadyAndNotAlive() throws Exception {
        LaneStageHosting<?, ?, ?> lanes = new LaneStageHosting<>(new CpuBackend());
        StageHosting failing = (system, rank, stages) -> lanes.host(system, rank, stages)
                .thenApply(h -> new HostedStages(h.lanes(),
                        CompletableFuture.failedFuture(new IllegalStateException("tensor model.norm.weight: bad shape")),
                        h.stop()));
        NodeSettings settings = TestNodes.localCluster(1).get(0);
        GraphlaneNode node = GraphlaneNode.start(settings, TestNodes.base(), 1, failing);
        try {
            node.hosted().toCompletableFuture().get(30, TimeUnit.SECONDS);
            TestNodes.awaitCondition("liveness to turn false", Duration.ofSeconds(10),
                    () -> TestNodes.get(settings.managementPort(), "/alive").statusCode() == 503);
            assertEquals(503, TestNodes.get(settings.managementPort(), "/ready").statusCode());
            assertTrue(node.readiness().failure().orElseThrow().getMessage().contains("model.norm.weight"));
        } finally {
            node.shutdown().toCompletableFuture().get(30, TimeUnit.SECONDS);
        }
    }
}
