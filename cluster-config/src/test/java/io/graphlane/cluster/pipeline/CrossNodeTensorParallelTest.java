package io.graphlane.cluster.pipeline;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import io.graphlane.cluster.ClusterProfile;
import io.graphlane.cluster.GraphlaneNode;
import io.graphlane.cluster.NodeIdentity;
import io.graphlane.cluster.NodeSettings;
import io.graphlane.cluster.ParallelLayout;
import io.graphlane.inference.api.GenerationListener;
import io.graphlane.inference.api.GenerationRefusedException;
import io.graphlane.inference.api.GenerationRequest;
import io.graphlane.inference.api.GenerationResult;
import io.graphlane.inference.model.ModelDirectory;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalInt;
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
 * cluster transport (Artery), and the serving node generates the fixture's greedy tokens. The last test stops a shard's
 * node, so the tests run in order.
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
    private static Path model;
    private static ClusterPipeline pipeline;
    private static JsonNode reference;

    @BeforeAll
    static void formCluster() throws Exception {
        model = Path.of(CrossNodeTensorParallelTest.class.getResource("/tiny-llama/config.json").toURI()).getParent();
        reference = new ObjectMapper().readTree(model.resolve("reference.json").toFile());
        List<NodeSettings> settings = localCluster();
        Config base = ConfigFactory.parseString("""
                pekko.cluster.jmx.multi-mbeans-in-same-jvm = on
                pekko.loglevel = WARNING
                pekko.coordinated-shutdown.run-by-jvm-shutdown-hook = off
                pekko.coordinated-shutdown.run-by-actor-system-terminate = off
                """).withFallback(ConfigFactory.load());
        for (int rank = 0; rank < NODES; rank++) {
            RUNNING.add(GraphlaneNode.start(settings.get(rank), base, LAYOUT, new ModelStageHosting(model, STAGES, SHARDS, LOADER)));
        }
        for (GraphlaneNode n : RUNNING) {
            IDENTITIES.add(n.hosted().toCompletableFuture().get(90, TimeUnit.SECONDS));
        }
        pipeline = ClusterPipeline.start(RUNNING.get(0).system(), ModelDirectory.open(model), STAGES, 16);
        awaitUntil("the pipeline is available", () -> pipeline.unavailableReason().isEmpty());
    }

    @AfterAll
    static void stopCluster() throws Exception {
        if (pipeline != null) {
            pipeline.close();
        }
        for (GraphlaneNode n : RUNNING) {
            n.shutdown().toCompletableFuture().get(30, TimeUnit.SECONDS);
        }
        LOADER.shutdown();
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
        List<GenerationRequest> requests = new ArrayList<>();
        List<List<Integer>> expected = new ArrayList<>();
        for (JsonNode p : reference.get("prompts")) {
            requests.add(GenerationRequest.greedy(ints(p.get("ids")), 16));
            expected.add(ints(p.get("greedy_16")));
        }
        List<GenerationResult> results = pipeline.generateAll(requests, Duration.ofSeconds(90));
        for (int i = 0; i < requests.size(); i++) {
            assertEquals(expected.get(i), results.get(i).generatedIds(), "greedy tokens of prompt " + requests.get(i).promptIds());
        }
    }

    @Test
    @Order(3)
    void losingAShardsNodeMakesItsStageUnavailableByName() throws Exception {
        GraphlaneNode lost = RUNNING.remove(NODES - 1);
        lost.system().terminate();
        lost.system().getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
        awaitUntil("stage 1 is reported unavailable", () -> pipeline.unavailableReason().isPresent());
        String why = pipeline.unavailableReason().get();
        assertTrue(why.contains("stage 1"), why);
        GenerationRefusedException refused = assertThrows(GenerationRefusedException.class,
                () -> pipeline.submit(GenerationRequest.greedy(List.of(250), 4), new GenerationListener() { }));
        assertEquals(GenerationRefusedException.Reason.UNAVAILABLE, refused.reason());
    }

    private static void awaitUntil(String what, java.util.function.BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out waiting until " + what);
            }
            Thread.sleep(100); // paces the polling only
        }
    }

    private static List<NodeSettings> localCluster() throws Exception {
        List<ServerSocket> sockets = new ArrayList<>();
        for (int i = 0; i < 2 * NODES; i++) {
            sockets.add(new ServerSocket(0));
        }
        List<Integer> ports = sockets.stream().map(ServerSocket::getLocalPort).toList();
        for (ServerSocket s : sockets) {
            s.close();
        }
        List<Integer> management = ports.subList(NODES, 2 * NODES);
        List<NodeSettings> all = new ArrayList<>();
        for (int rank = 0; rank < NODES; rank++) {
            all.add(new NodeSettings(ClusterProfile.LOCAL, NODES, OptionalInt.of(rank), "127.0.0.1", ports.get(rank),
                    management.get(rank), management, List.of(), false));
        }
        return all;
    }

    private static List<Integer> ints(JsonNode array) {
        List<Integer> out = new ArrayList<>();
        array.forEach(n -> out.add(n.asInt()));
        return out;
    }
}
