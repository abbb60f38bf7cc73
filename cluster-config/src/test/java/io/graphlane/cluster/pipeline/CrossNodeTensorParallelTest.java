package io.graphlane.cluster.pipeline;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.graphlane.actors.wire.WireTensor;
import io.graphlane.cluster.GraphlaneNode;
import io.graphlane.cluster.NodeIdentity;
import io.graphlane.cluster.NodeSettings;
import io.graphlane.cluster.ParallelLayout;
import io.graphlane.core.tensor.Shape;
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
import java.util.stream.StreamSupport;
import io.graphlane.scheduler.pipeline.PipelineSettings;
import io.graphlane.server.OpenAiServer;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.receptionist.Receptionist;
import org.apache.pekko.cluster.UniqueAddress;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.http.javadsl.ServerBinding;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * Four nodes in one JVM holding the tiny-llama fixture as 2 stages x 2 tensor-parallel shards (rank r: shard r mod 2
 * of stage r / 2): each shard reads only its slices of the checkpoint, the shards of a stage all-reduce over the
 * cluster transport, and the serving node generates the fixture's greedy tokens, and serves them over HTTP with its
 * readiness following the pipeline, as {@code graphlane node --serve} does. The later tests stop a shard's node (the
 * next request gets a 503 with Retry-After, and the serving node's /health and /ready turn 503 at once), then the
 * lead's (shard 0) of a stage, and start a replacement for each: the stage re-forms with the surviving shard nodes as
 * they are; and a failed step, which leaves the stage's group poisoned, makes the stage re-form with the same shards.
 * The tests run in order.
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
    private static UniqueAddress lostShard;
    private static ServerBinding http;
    private static final HttpClient CLIENT = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

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
        pipeline = ClusterPipeline.start(RUNNING.get(0).system(), ModelDirectory.open(model), LAYOUT,
                PipelineSettings.defaults(STAGES).withRequestLimits(16, 16));
        OpenAiServer server = new OpenAiServer(RUNNING.get(0).system(), pipeline);
        http = server.bind("127.0.0.1", 0).toCompletableFuture().get(30, TimeUnit.SECONDS);
        RUNNING.get(0).readiness().requireServing(pipeline::unavailableReason);
        FixtureNodes.awaitUntil("the pipeline is available", () -> pipeline.unavailableReason().isEmpty());
    }

    @AfterAll
    static void stopCluster() throws Exception {
        if (http != null) {
            http.unbind().toCompletableFuture().get(10, TimeUnit.SECONDS);
        }
        FixtureNodes.stop(pipeline, RUNNING, LOADER);
    }

    private static HttpResponse<String> httpGet(int port, String path) throws Exception {
        return CLIENT.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).timeout(Duration.ofSeconds(30))
                .GET().build(), HttpResponse.BodyHandlers.ofString());
    }

    private static int readyStatus(int managementPort) {
        try {
            return httpGet(managementPort, "/ready").statusCode();
        } catch (Exception e) {
            return -1; // not bound yet
        }
    }

    private static HttpResponse<String> complete(String body) throws Exception {
        return CLIENT.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + http.localAddress().getPort() + "/v1/completions"))
                .timeout(Duration.ofSeconds(60)).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
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
    void losingAShardsNodeAnswersTheNextRequest503AndTurnsHealthAndReadiness503AtOnce() throws Exception {
        int httpPort = http.localAddress().getPort();
        int managementPort = settings.get(0).managementPort();
        assertEquals(200, httpGet(httpPort, "/health").statusCode());
        FixtureNodes.awaitUntil("the serving node is ready", () -> readyStatus(managementPort) == 200);
        GraphlaneNode lost = RUNNING.remove(NODES - 1);
        lostShard = Cluster.get(lost.system()).selfMember().uniqueAddress();
        lost.system().terminate();
        lost.system().getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);

        // The next request, whether its step meets the lost member or the loss is known already: 503, never 500.
        HttpResponse<String> next = complete("{\"prompt\":[250],\"max_tokens\":4,\"temperature\":0}");
        assertEquals(503, next.statusCode(), next.body());
        assertEquals("5", next.headers().firstValue("Retry-After").orElseThrow());
        JsonNode error = new ObjectMapper().readTree(next.body()).get("error");
        assertEquals("unavailable", error.get("code").asText());
        String message = error.get("message").asText();
        assertTrue(message.contains("stage 1"), message);
        assertTrue(!message.contains("Exception") && !message.contains("io.graphlane"), "names no class: " + message);
        // From that moment the serving node says so, without waiting for the failure detector or the Receptionist.
        HttpResponse<String> health = httpGet(httpPort, "/health");
        assertEquals(503, health.statusCode(), health.body());
        assertEquals("5", health.headers().firstValue("Retry-After").orElseThrow());
        HttpResponse<String> ready = httpGet(managementPort, "/ready");
        assertEquals(503, ready.statusCode(), ready.body());
        assertTrue(ready.body().contains("stage 1"), ready.body());

        String why = pipeline.unavailableReason().orElseThrow();
        assertTrue(why.contains("stage 1"), why);
        GenerationRefusedException refused = assertThrows(GenerationRefusedException.class,
                () -> pipeline.submit(GenerationRequest.greedy(List.of(250), 4), new GenerationListener() { }));
        assertEquals(GenerationRefusedException.Reason.UNAVAILABLE, refused.reason());
    }

    @Test
    @Order(4)
    void aReplacementForTheLostShardsNodeReformsTheStage() throws Exception {
        awaitRemoved(lostShard);
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
        UniqueAddress lost = Cluster.get(lead.system()).selfMember().uniqueAddress();
        RUNNING.remove(lead);
        lead.system().terminate();
        lead.system().getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
        FixtureNodes.awaitUntil("stage 1 is reported unavailable", () -> pipeline.unavailableReason().isPresent());
        String why = pipeline.unavailableReason().get();
        assertTrue(why.contains("stage 1"), why);
        // The serving node reports the stage lost as soon as the lead is unreachable, before the lead is removed.
        awaitRemoved(lost);

        GraphlaneNode replacement = start(leadRank);
        RUNNING.add(replacement);
        assertEquals(0, replacement.hosted().toCompletableFuture().get(90, TimeUnit.SECONDS).shard());
        FixtureNodes.awaitUntil("stage 1 is available again", () -> pipeline.unavailableReason().isEmpty());
        FixtureNodes.assertGreedyTokens(pipeline, reference, Duration.ofSeconds(90));
    }

    @Test
    @Order(6)
    void aFailedStepLeavesTheGroupPoisonedAndTheStageReformsWithTheSameShards() throws Exception {
        ActorRef<StageHost.Command> stage1 = hostOf(1);
        TestProbe<StageReply> engine = TestProbe.create(RUNNING.get(0).system());
        // An activation 3 wide where the model's hidden size is 64: shard 0's forward fails and leaves the group.
        WireTensor wrong = WireTensor.ofFloats(Shape.of(1, 3), new float[] {1f, 2f, 3f});
        stage1.tell(FixtureNodes.hiddenStep(9_100_000L, 1, 9_100_000L, 0, wrong, new long[0], engine.getRef()));
        StageReply.StepFailed failed = engine.expectMessageClass(StageReply.StepFailed.class, Duration.ofSeconds(20));
        assertEquals(1, failed.stage());

        // Steps are refused while the stage re-forms, then run again on the same host, in a fresh group.
        int hidden = ModelDirectory.open(model).config().hiddenSize();
        WireTensor zeros = WireTensor.ofFloats(Shape.of(1, hidden), new float[hidden]);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        StageReply reply;
        long request = 9_100_001L;
        do {
            // Each step forgets the request of the step before it, as the serving node's next step would.
            stage1.tell(FixtureNodes.hiddenStep(request, 1, request, 0, zeros, new long[] {request - 1}, engine.getRef()));
            reply = engine.expectMessageClass(StageReply.class, Duration.ofSeconds(20));
            request++;
            if (reply instanceof StageReply.StepFailed refused) {
                String why = refused.failure().cause().getMessage();
                assertTrue(why.contains("re-form"), why);
                Thread.sleep(200); // paces the polling only
            }
        } while (!(reply instanceof StageReply.StepDone) && System.nanoTime() < deadline);
        StageReply.StepDone done = assertInstanceOf(StageReply.StepDone.class, reply, "stage 1 runs again after re-forming");
        assertEquals(ModelDirectory.open(model).config().vocabSize(), done.values().shape().dims()[1]);
    }

    private static ActorRef<StageHost.Command> hostOf(int stage) {
        TestProbe<Receptionist.Listing> probe = TestProbe.create(RUNNING.get(0).system());
        RUNNING.get(0).system().receptionist().tell(Receptionist.find(StageKeys.host(stage), probe.getRef()));
        return probe.receiveMessage().getServiceInstances(StageKeys.host(stage)).iterator().next();
    }

    /**
     * Waits until every running node has removed {@code lost} from its membership: a replacement on the same host and
     * port starts only then, since Pekko keys remote death watch by address and the old incarnation's late removal
     * would end the watches on the new one's actors.
     */
    private static void awaitRemoved(UniqueAddress lost) throws InterruptedException {
        FixtureNodes.awaitUntil("every node has removed " + lost, () -> RUNNING.stream().allMatch(n ->
                StreamSupport.stream(Cluster.get(n.system()).state().getMembers().spliterator(), false)
                        .noneMatch(m -> m.uniqueAddress().equals(lost))));
    }

    private static GraphlaneNode start(int rank) {
        return GraphlaneNode.start(settings.get(rank), FixtureNodes.base(), LAYOUT, new ModelStageHosting(model, STAGES, SHARDS, LOADER));
    }
}
