package io.graphlane.cluster.pipeline;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.graphlane.cluster.GraphlaneNode;
import io.graphlane.cluster.NodeIdentity;
import io.graphlane.cluster.NodeSettings;
import io.graphlane.cluster.ParallelLayout;
import io.graphlane.inference.api.GenerationListener;
import io.graphlane.inference.api.GenerationRefusedException;
import io.graphlane.inference.api.GenerationRequest;
import io.graphlane.inference.model.ModelDirectory;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * Four nodes in one JVM holding the tiny-llama fixture as 2 stages x 2 tensor-parallel shards (rank r: shard r mod 2
 * of stage r / 2): each shard reads only its slices of the checkpoint, the shards of a stage all-reduce over the
 * cluster transport, and the serving node generates the fixture's greedy tokens. The later tests stop a shard's node,
 * then the lead's (shard 0) of a stage, and start a replacement for each: the stage re-forms with the surviving shard
 * nodes as they are, so the tests run in order.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class CrossNodeTensorParallelTest {
    private static final int STAGES = 2;
    private static final int SHARDS = 2;
    private static final int NODES = STAGES * SHARDS;
    private static final ParallelLayout LAYOUT = new ParallelLayout(NODES, STAGES, SHARDS);
    private static final ExecutorService LOADER = Executors.newSingleThreadExecutor();
    private static final List<GraphlaneNode> RUNNING = new ArrayList<>();
    private static final List<NodeIdentity> IDENTITIES = new ArrayList<>();
    private static List<NodeSettings> settings;
    private static Path model;
    private static ClusterPipeline pipeline;
    private static JsonNode reference;

    @BeforeAll
    static void formCluster() throws Exception {
        model = Path.of(CrossNodeTensorParallelTest.class.getResource("/tiny-llama/config.json").toURI()).getParent();
        reference = new ObjectMapper().readTree(model.resolve("reference.json").toFile());
        settings = FixtureNodes.localCluster(NODES);
        for (int rank = 0; rank < NODES; rank++) {
            RUNNING.add(start(rank));
        }
        for (GraphlaneNode n : RUNNING) {
            IDENTITIES.add(n.hosted().toCompletableFuture().get(90, TimeUnit.SECONDS));
        }
        pipeline = ClusterPipeline.start(RUNNING.get(0).system(), ModelDirectory.open(model), STAGES, 16);
        FixtureNodes.awaitUntil("the pipeline is available", () -> pipeline.unavailableReason().isEmpty());
    }

    @AfterAll
    static void stopCluster() throws Exception {
        FixtureNodes.stop(pipeline, RUNNING, LOADER);
    }

    @Test
    @Order(1)
    void eachNodeHoldsTheShardItsRankNames() {
        for (int rank = 0; rank < NODES; rank++) {
            NodeIdentity id = IDENTITIES.get(rank);
            assertEquals(List.of(rank / SHARDS), id.stages(), "stage of rank " + rank);
            assertEquals(rank % SHARDS, id.shard(), "shard of rank " + rank);
        }
    }

    @Test
    @Order(2)
    void shardedStagesOnFourNodesGenerateTheFixturesGreedyTokens() throws Exception {
        FixtureNodes.assertGreedyTokens(pipeline, reference, Duration.ofSeconds(90));
    }

    @Test
    @Order(3)
    void losingAShardsNodeMakesItsStageUnavailableByName() throws Exception {
        GraphlaneNode lost = RUNNING.remove(NODES - 1);
        lost.system().terminate();
        lost.system().getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
        FixtureNodes.awaitUntil("stage 1 is reported unavailable", () -> pipeline.unavailableReason().isPresent());
        String why = pipeline.unavailableReason().get();
        assertTrue(why.contains("stage 1"), why);
        GenerationRefusedException refused = assertThrows(GenerationRefusedException.class,
                () -> pipeline.submit(GenerationRequest.greedy(List.of(250), 4), new GenerationListener() { }));
        assertEquals(GenerationRefusedException.Reason.UNAVAILABLE, refused.reason());
    }

    @Test
    @Order(4)
    void aReplacementForTheLostShardsNodeReformsTheStage() throws Exception {
        GraphlaneNode replacement = start(NODES - 1);
        RUNNING.add(replacement);
        assertEquals(1, replacement.hosted().toCompletableFuture().get(90, TimeUnit.SECONDS).shard());
        FixtureNodes.awaitUntil("stage 1 is available again", () -> pipeline.unavailableReason().isEmpty());
        FixtureNodes.assertGreedyTokens(pipeline, reference, Duration.ofSeconds(90));
    }

    @Test
    @Order(5)
    void aReplacementForALostLeadReformsItsStageWithTheSurvivingShard() throws Exception {
        int leadRank = SHARDS; // shard 0 of stage 1; rank 0 (stage 0's lead) serves the pipeline
        GraphlaneNode lead = RUNNING.stream().filter(n -> n.settings().rank().orElseThrow() == leadRank).findFirst().orElseThrow();
        RUNNING.remove(lead);
        lead.system().terminate();
        lead.system().getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
        FixtureNodes.awaitUntil("stage 1 is reported unavailable", () -> pipeline.unavailableReason().isPresent());
        String why = pipeline.unavailableReason().get();
        assertTrue(why.contains("stage 1"), why);

        GraphlaneNode replacement = start(leadRank);
        RUNNING.add(replacement);
        assertEquals(0, replacement.hosted().toCompletableFuture().get(90, TimeUnit.SECONDS).shard());
        FixtureNodes.awaitUntil("stage 1 is available again", () -> pipeline.unavailableReason().isEmpty());
        FixtureNodes.assertGreedyTokens(pipeline, reference, Duration.ofSeconds(90));
    }

    private static GraphlaneNode start(int rank) {
        return GraphlaneNode.start(settings.get(rank), FixtureNodes.base(), LAYOUT, new ModelStageHosting(model, STAGES, SHARDS, LOADER));
    }
}
