package io.graphlane.cluster.pipeline;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.graphlane.actors.wire.RemoteFailureException;
import io.graphlane.actors.wire.WireTensor;
import io.graphlane.cluster.GraphlaneNode;
import io.graphlane.cluster.NodeSettings;
import io.graphlane.core.tensor.Shape;
import io.graphlane.inference.api.GenerationListener;
import io.graphlane.inference.api.GenerationRefusedException;
import io.graphlane.inference.api.GenerationRequest;
import io.graphlane.inference.api.GenerationResult;
import io.graphlane.inference.model.ModelDirectory;
import io.graphlane.inference.pipeline.InferencePipeline;
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
 * nodes (micro-batched, as the local engine), a stage's failure and a peer's malformed step, and the loss and return of a
 * node. Messages between the nodes cross Artery, so each
 * one goes through the wire format. The last test kills a node, so the tests run in order.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class CrossNodeStagesTest {
    private static final int NODES = 3;
    private static final ExecutorService LOADER = Executors.newSingleThreadExecutor();
    private static final List<GraphlaneNode> RUNNING = new ArrayList<>();
    private static final List<ModelStageHosting> HOSTING = new ArrayList<>();
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

    /**
     * Eight requests at once (the fixture's prompts, some twice, of different lengths) get the same greedy tokens as the
     * same engine over local stage lanes, and the stage hosts ran steps that carried several requests' rows.
     */
    @Test
    @Order(2)
    void eightConcurrentRequestsMatchTheLocalEngineAndShareSteps() throws Exception {
        List<GenerationRequest> requests = new ArrayList<>();
        JsonNode prompts = reference.get("prompts");
        for (int i = 0; i < 8; i++) {
            requests.add(GenerationRequest.greedy(FixtureNodes.ints(prompts.get(i % prompts.size()).get("ids")), 24));
        }
        long widestBefore = HOSTING.stream().mapToLong(h -> h.stepCounters().widestStep()).max().orElse(0);
        List<GenerationResult> cluster = pipeline.generateAll(requests, Duration.ofSeconds(120));
        List<GenerationResult> local;
        try (InferencePipeline engine = InferencePipeline.builder().model(model).stages(NODES).build()) {
            local = engine.generateAll(requests, Duration.ofSeconds(120));
        }
        for (int i = 0; i < requests.size(); i++) {
            assertEquals(local.get(i).generatedIds(), cluster.get(i).generatedIds(), "greedy tokens of request " + i);
            assertEquals(24, cluster.get(i).generatedIds().size());
        }
        long widest = HOSTING.stream().mapToLong(h -> h.stepCounters().widestStep()).max().orElse(0);
        assertTrue(widest > 1, "a stage step carried the rows of " + widest + " request(s) at most (before: " + widestBefore + ")");
        for (ModelStageHosting h : HOSTING) {
            StepCounters c = h.stepCounters();
            assertTrue(c.segments() > c.steps(), "each node ran " + c.steps() + " steps of " + c.segments() + " request rows: batched");
        }
    }

    @Test
    @Order(3)
    void aFailedStageOnOneNodeFailsTheStepNamingTheStageNodeAndCause() {
        ActorRef<StageHost.Command> stage1 = hostOf(1);
        TestProbe<StageReply> engine = TestProbe.create(RUNNING.get(0).system());
        // An activation 3 wide where the model's hidden size is 64: stage 1's forward fails on node 1.
        WireTensor wrong = WireTensor.ofFloats(Shape.of(1, 3), new float[] {1f, 2f, 3f});
        stage1.tell(FixtureNodes.hiddenStep(9_000_001L, 1, 9_000_001L, 0, wrong, new long[0], engine.getRef()));
        StageReply.StepFailed failed = engine.expectMessageClass(StageReply.StepFailed.class, Duration.ofSeconds(20));
        assertEquals(9_000_001L, failed.stepId());
        assertEquals(1, failed.stage(), "the failure is stage 1's");
        assertEquals(address(1), failed.node(), "on node 1");
        RemoteFailureException cause = assertInstanceOf(RemoteFailureException.class, failed.failure().cause(),
                "the cause crossed nodes");
        assertTrue(cause.getMessage().contains("64") && cause.getMessage().contains("3"), cause.getMessage());
        engine.expectNoMessage(Duration.ofMillis(300));
    }

    /**
     * Steps a peer got wrong (an activation of rank 1 or 3, rows that do not match the segments, a negative start,
     * positions past the model's maximum and past Integer.MAX_VALUE) each fail naming the field, found and expected value,
     * and the stage's host runs the next, well formed step as before.
     */
    @Test
    @Order(4)
    void aMalformedStepFromAPeerIsRefusedNamingTheFieldAndTheHostKeepsServing() {
        ActorRef<StageHost.Command> stage1 = hostOf(1);
        TestProbe<StageReply> engine = TestProbe.create(RUNNING.get(0).system());
        int hidden = ModelDirectory.open(model).config().hiddenSize();
        WireTensor row = WireTensor.ofFloats(Shape.of(1, hidden), new float[hidden]);
        record Bad(StageHost.Step step, String says) {
        }
        long request = 9_200_000L;
        ActorRef<StageReply> to = engine.getRef();
        List<Bad> bad = List.of(
                new Bad(FixtureNodes.hiddenStep(request, 1, request, 0, WireTensor.ofFloats(Shape.of(hidden), new float[hidden]),
                        new long[0], to), "activation: expected a rank-2 tensor"),
                new Bad(FixtureNodes.hiddenStep(request + 1, 1, request + 1, 0, WireTensor.ofFloats(Shape.of(1, 1, hidden),
                        new float[hidden]), new long[0], to), "found shape [1, 1, " + hidden + "]"),
                new Bad(new StageHost.Step(request + 2, 1, new long[] {request + 2}, new int[] {0}, new int[] {2}, new int[0], row,
                        new long[0], new long[0], new int[0], to), "activation: expected 2 rows (the segments' lengths), found 1"),
                new Bad(FixtureNodes.hiddenStep(request + 3, 1, request + 3, -4, row, new long[0], to),
                        "start position: expected >= 0, found -4"),
                new Bad(FixtureNodes.hiddenStep(request + 4, 1, request + 4, 256, row, new long[0], to),
                        "256 + 1 rows = 257 positions, past the model's maximum of 256"),
                new Bad(FixtureNodes.hiddenStep(request + 5, 1, request + 5, Integer.MAX_VALUE, row, new long[0], to),
                        Integer.MAX_VALUE + " + 1 rows = " + (Integer.MAX_VALUE + 1L) + " positions"));
        for (Bad b : bad) {
            stage1.tell(b.step());
            StageReply.StepFailed failed = engine.expectMessageClass(StageReply.StepFailed.class, Duration.ofSeconds(20));
            assertEquals(b.step().stepId(), failed.stepId());
            assertEquals(1, failed.stage(), "refused by stage 1");
            String why = failed.failure().cause().getMessage();
            assertTrue(why.contains(b.says()), why);
        }
        long good = request + 6;
        stage1.tell(FixtureNodes.hiddenStep(good, 1, good, 0, row, new long[0], to));
        StageReply.StepDone done = engine.expectMessageClass(StageReply.StepDone.class, Duration.ofSeconds(20));
        assertEquals(good, done.stepId());
        assertEquals(hidden, done.values().shape().dims()[1], "stage 1 of 3 answers an activation");
        // The next step forgets the request, as the serving node's next step would.
        stage1.tell(FixtureNodes.hiddenStep(good + 1, 1, good + 1, 0, row, new long[] {good}, to));
        engine.expectMessageClass(StageReply.StepDone.class, Duration.ofSeconds(20));
    }

    @Test
    @Order(5)
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
        RUNNING.get(0).system().receptionist().tell(Receptionist.find(StageKeys.host(stage), probe.getRef()));
        return probe.receiveMessage().getServiceInstances(StageKeys.host(stage)).iterator().next();
    }

    private static String address(int rank) {
        return "pekko://graphlane@127.0.0.1:" + settings.get(rank).arteryPort();
    }

    private static GraphlaneNode start(int rank) {
        ModelStageHosting hosting = new ModelStageHosting(model, NODES, LOADER);
        HOSTING.add(hosting);
        return GraphlaneNode.start(settings.get(rank), FixtureNodes.base(), NODES, hosting);
    }

}
