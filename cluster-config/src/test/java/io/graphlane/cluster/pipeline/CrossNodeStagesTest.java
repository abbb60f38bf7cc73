package io.graphlane.cluster.pipeline;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.graphlane.actors.wire.ActivationFrame;
import io.graphlane.actors.wire.RemoteFailureException;
import io.graphlane.actors.wire.WireTensor;
import io.graphlane.cluster.GraphlaneNode;
import io.graphlane.cluster.NodeSettings;
import io.graphlane.core.graph.CompletionHandle;
import io.graphlane.core.graph.LaneId;
import io.graphlane.core.tensor.Shape;
import io.graphlane.inference.api.GenerationListener;
import io.graphlane.inference.api.GenerationRefusedException;
import io.graphlane.inference.api.GenerationRequest;
import io.graphlane.inference.api.GenerationResult;
import io.graphlane.inference.model.ModelDirectory;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.receptionist.Receptionist;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * Three nodes in one JVM, each hosting one stage of the tiny-llama fixture (stage i on rank i): generation across
 * nodes, poisoning across nodes, and the loss and return of a node. Messages between the nodes cross Artery, so each
 * one goes through the wire format. The last test kills a node, so the tests run in order.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class CrossNodeStagesTest {
    private static final int NODES = 3;
    private static final ExecutorService LOADER = Executors.newSingleThreadExecutor();
    private static final List<GraphlaneNode> RUNNING = new ArrayList<>();
    private static List<NodeSettings> settings;
    private static Path model;
    private static ClusterPipeline pipeline;
    private static JsonNode reference;

    @BeforeAll
    static void formCluster() throws Exception {
        model = Path.of(CrossNodeStagesTest.class.getResource("/tiny-llama/config.json").toURI()).getParent();
        reference = new ObjectMapper().readTree(model.resolve("reference.json").toFile());
        settings = FixtureNodes.localCluster(NODES);
        for (int rank = 0; rank < NODES; rank++) {
            RUNNING.add(start(rank));
        }
        for (GraphlaneNode n : RUNNING) {
            n.hosted().toCompletableFuture().get(60, TimeUnit.SECONDS);
        }
        pipeline = ClusterPipeline.start(RUNNING.get(0).system(), ModelDirectory.open(model), NODES, 16);
        awaitAvailable();
    }

    @AfterAll
    static void stopCluster() throws Exception {
        FixtureNodes.stop(pipeline, RUNNING, LOADER);
    }

    @Test
    @Order(1)
    void stagesOnThreeNodesGenerateTheFixturesGreedyTokens() throws Exception {
        FixtureNodes.assertGreedyTokens(pipeline, reference, Duration.ofSeconds(60));
    }

    @Test
    @Order(2)
    void aFailedStageOnOneNodePoisonsTheLaterStageOnAnotherWithTheCause() {
        GraphlaneNode serving = RUNNING.get(0);
        ActorRef<StageHost.Command> stage1 = hostOf(1);
        ActorRef<StageHost.Command> stage2 = hostOf(2);
        TestProbe<StageReply> engine = TestProbe.create(serving.system());
        // An activation 3 wide where the model's hidden size is 64: stage 1's forward fails on node 1.
        WireTensor wrong = WireTensor.ofFloats(Shape.of(1, 3), new float[] {1f, 2f, 3f});
        CompletionHandle producer = new CompletionHandle(address(0), new LaneId("stage-0"), 1);
        stage1.tell(new StageHost.Run(9_000_001L, 1, 1, new int[] {250}, 0, new ActivationFrame(producer, 9_000_001L, 1, wrong),
                List.of(stage2), engine.getRef()));
        StageReply reply = engine.expectMessageClass(StageReply.StepFailed.class, Duration.ofSeconds(20));
        StageReply.StepFailed failed = (StageReply.StepFailed) reply;
        assertEquals(1, failed.stage(), "the root is stage 1");
        assertEquals(address(1), failed.node(), "the root is on node 1");
        RemoteFailureException cause = assertInstanceOf(RemoteFailureException.class, failed.failure().cause(),
                "the cause crossed nodes");
        assertTrue(cause.getMessage().contains("64") && cause.getMessage().contains("3"), cause.getMessage());
        engine.expectNoMessage(Duration.ofMillis(300));
    }

    /**
     * Steps a peer got wrong (an activation of rank 1 or 3, a negative start, positions past the model's maximum and past
     * Integer.MAX_VALUE) each fail naming the field, found and expected value, and the stage's host runs the next, well
     * formed step as before.
     */
    @Test
    @Order(3)
    void aMalformedStepFromAPeerIsRefusedNamingTheFieldAndTheHostKeepsServing() {
        ActorRef<StageHost.Command> stage1 = hostOf(1);
        ActorRef<StageHost.Command> stage2 = hostOf(2);
        TestProbe<StageReply> engine = TestProbe.create(RUNNING.get(0).system());
        CompletionHandle producer = new CompletionHandle(address(0), new LaneId("stage-0"), 1);
        int hidden = ModelDirectory.open(model).config().hiddenSize();
        WireTensor row = WireTensor.ofFloats(Shape.of(1, hidden), new float[hidden]);
        record Bad(WireTensor activation, int start, String says) {
        }
        List<Bad> bad = List.of(
                new Bad(WireTensor.ofFloats(Shape.of(hidden), new float[hidden]), 0, "activation: expected a rank-2 tensor"),
                new Bad(WireTensor.ofFloats(Shape.of(1, 1, hidden), new float[hidden]), 0, "found shape [1, 1, " + hidden + "]"),
                new Bad(row, -4, "start position: expected >= 0, found -4"),
                new Bad(row, 256, "256 + 1 rows = 257 positions, past the model's maximum of 256"),
                new Bad(row, Integer.MAX_VALUE, Integer.MAX_VALUE + " + 1 rows = " + (Integer.MAX_VALUE + 1L) + " positions"));
        long request = 9_200_000L;
        for (Bad b : bad) {
            stage1.tell(new StageHost.Run(request, 1, 1, new int[] {250}, b.start(), new ActivationFrame(producer, request, 1, b.activation()),
                    List.of(stage2), engine.getRef()));
            StageReply.StepFailed failed = engine.expectMessageClass(StageReply.StepFailed.class, Duration.ofSeconds(20));
            assertEquals(request, failed.requestId());
            assertEquals(1, failed.stage(), "refused by stage 1");
            String why = failed.failure().cause().getMessage();
            assertTrue(why.contains(b.says()), why);
            request++;
        }
        stage1.tell(new StageHost.Run(request, 1, 1, new int[] {250}, 0, new ActivationFrame(producer, request, 1, row),
                List.of(stage2), engine.getRef()));
        StageReply.StepDone done = engine.expectMessageClass(StageReply.StepDone.class, Duration.ofSeconds(20));
        assertEquals(request, done.requestId());
        assertEquals(ModelDirectory.open(model).config().vocabSize(), done.logits().shape().dims()[1]);
        stage1.tell(new StageHost.Forget(request));
        stage2.tell(new StageHost.Forget(request));
    }

    @Test
    @Order(4)
    void aLostNodeFailsItsRequestsWith503AndServesAgainOnceRestarted() throws Exception {
        GraphlaneNode lost = RUNNING.remove(2);
        String lostAddress = address(2);
        long killed = System.nanoTime();
        lost.system().terminate();
        Throwable failure;
        try {
            failure = catchFailure(pipeline.submit(GenerationRequest.greedy(List.of(250), 200), new GenerationListener() { })
                    .result().toCompletableFuture());
        } catch (GenerationRefusedException refused) {
            failure = refused;
        }
        double seconds = (System.nanoTime() - killed) / 1e9;
        GenerationRefusedException unavailable = assertInstanceOf(GenerationRefusedException.class, failure);
        assertEquals(GenerationRefusedException.Reason.UNAVAILABLE, unavailable.reason());
        assertTrue(unavailable.getMessage().contains("stage 2") && unavailable.getMessage().contains(lostAddress),
                unavailable.getMessage());
        assertTrue(seconds < 15, "failed after " + seconds + " s");
        GenerationRefusedException refused = org.junit.jupiter.api.Assertions.assertThrows(GenerationRefusedException.class,
                () -> pipeline.submit(GenerationRequest.greedy(List.of(250), 4), new GenerationListener() { }));
        assertEquals(GenerationRefusedException.Reason.UNAVAILABLE, refused.reason());
        lost.system().getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);

        RUNNING.add(start(2));
        RUNNING.get(2).hosted().toCompletableFuture().get(60, TimeUnit.SECONDS);
        awaitAvailable();
        JsonNode first = reference.get("prompts").get(0);
        GenerationResult again = pipeline.generateAll(List.of(GenerationRequest.greedy(FixtureNodes.ints(first.get("ids")), 16)),
                Duration.ofSeconds(30)).get(0);
        assertEquals(FixtureNodes.ints(first.get("greedy_16")), again.generatedIds());
    }

    private static Throwable catchFailure(CompletableFuture<GenerationResult> result) throws Exception {
        try {
            result.get(30, TimeUnit.SECONDS);
            throw new AssertionError("the request finished although a stage's node was killed");
        } catch (ExecutionException e) {
            return e.getCause();
        }
    }

    private static void awaitAvailable() throws InterruptedException {
        FixtureNodes.awaitUntil("the pipeline is available", () -> pipeline.unavailableReason().isEmpty());
    }

    private static ActorRef<StageHost.Command> hostOf(int stage) {
        TestProbe<Receptionist.Listing> probe = TestProbe.create(RUNNING.get(0).system());
        RUNNING.get(0).system().receptionist().tell(Receptionist.find(StageHostKeys.stage(stage), probe.getRef()));
        return probe.receiveMessage().getServiceInstances(StageHostKeys.stage(stage)).iterator().next();
    }

    private static String address(int rank) {
        return "pekko://graphlane@127.0.0.1:" + settings.get(rank).arteryPort();
    }

    private static GraphlaneNode start(int rank) {
        return GraphlaneNode.start(settings.get(rank), FixtureNodes.base(), NODES, new ModelStageHosting(model, NODES, LOADER));
    }

}
