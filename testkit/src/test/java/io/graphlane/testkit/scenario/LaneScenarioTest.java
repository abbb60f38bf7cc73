package io.graphlane.testkit.scenario;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.core.completion.Outcome;
import io.graphlane.core.completion.PoisonedPreconditionException;
import io.graphlane.core.graph.GraphNode;
import io.graphlane.core.graph.LaneGraph;
import io.graphlane.core.graph.LaneId;
import io.graphlane.testkit.sim.SimBackend;
import io.graphlane.testkit.sim.SimCompletion;
import io.graphlane.testkit.sim.SimExecutor;
import io.graphlane.testkit.sim.SimWork;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

class LaneScenarioTest {
    private static final ActorTestKit KIT = ActorTestKit.create();

    @AfterAll
    static void shutdown() {
        KIT.shutdownTestKit();
    }

    @Test
    void crossLaneGraphOnTheSimulatedDeviceFinishesWithACleanLedger() {
        try (var s = LaneScenario.onSim(KIT, SimBackend.builder().seed(7), "a", "b")) {
            var weights = s.retained("weights");
            LaneGraph<SimWork> graph = s.graph()
                    .node(new GraphNode<>("load", LaneId.of("a"), SimWork.lasting(Duration.ofMillis(2)), List.of(), List.of(weights)))
                    .node("use", "b", SimWork.lasting(Duration.ofMillis(1)), "load")
                    .node("after", "a", SimWork.NOOP, "use")
                    .build();
            Map<String, Outcome> outcomes = s.submit(graph).awaitOutcomes();
            assertEquals(Map.of("load", Outcome.SUCCESS, "use", Outcome.SUCCESS, "after", Outcome.SUCCESS), outcomes);
            s.assertClean();
            assertEquals(1, weights.releaseCount());
        }
    }

    @Test
    void heldProducerThatFailsPoisonsItsConsumerAndTheLedgerStaysClean() {
        try (var s = LaneScenario.onSim(KIT, SimBackend.builder(), "a", "b")) {
            var buffer = s.retained("activation");
            LaneGraph<SimWork> graph = s.graph()
                    .node("produce", "a", SimWork.held("produce"))
                    .node(new GraphNode<>("consume", LaneId.of("b"), SimWork.NOOP, List.of("produce"), List.of(buffer)))
                    .build();
            LaneScenario.Submission run = s.submit(graph);
            SimBackend sim = (SimBackend) s.backend();
            sim.whenStarted("produce").toCompletableFuture().join();
            sim.fail("produce", new IllegalStateException("device fault"));
            Map<String, Outcome> outcomes = run.awaitOutcomes();
            assertEquals(Optional.of("produce"), run.awaitResult().node("consume").rootNode(),
                    "the graph runner names the root of a poisoned node");
            Outcome.Failed consumed = assertInstanceOf(Outcome.Failed.class, outcomes.get("consume"));
            PoisonedPreconditionException poisoned = assertInstanceOf(PoisonedPreconditionException.class, consumed.cause());
            assertTrue(poisoned.getMessage().contains("device fault"), poisoned.getMessage());
            s.assertClean();
        }
    }

    @Test
    void manualDeviceTimeIsDrivenUntilTheGraphEnds() {
        try (var s = LaneScenario.onSim(KIT, SimBackend.builder().manualTime(), "a", "b")) {
            var weights = s.retained("weights");
            LaneGraph<SimWork> graph = s.graph()
                    .node(new GraphNode<>("load", LaneId.of("a"), SimWork.lasting(Duration.ofMillis(2)), List.of(), List.of(weights)))
                    .node("use", "b", SimWork.lasting(Duration.ofMillis(1)), "load")
                    .node("after", "a", SimWork.NOOP, "use")
                    .build();
            Map<String, Outcome> outcomes = s.submit(graph).runUntilDone();
            assertEquals(Map.of("load", Outcome.SUCCESS, "use", Outcome.SUCCESS, "after", Outcome.SUCCESS), outcomes);
            assertEquals(Duration.ofMillis(3), ((SimBackend) s.backend()).now(), "device time moved along the critical path only");
            s.assertClean();
        }
    }

    @Test
    void waitingOnManualTimeThatNobodyDrivesFailsAtOnceNamingTheCause() {
        try (var s = LaneScenario.onSim(KIT, SimBackend.builder().manualTime(), "a")) {
            LaneGraph<SimWork> graph = s.graph().node("load", "a", SimWork.lasting(Duration.ofMillis(2))).build();
            LaneScenario<SimExecutor, SimCompletion, SimWork>.Submission run = s.submit(graph);
            AssertionError e = assertThrows(AssertionError.class, run::awaitOutcomes);
            assertTrue(e.getMessage().contains("did not end, and they will not on their own")
                    && e.getMessage().contains("runs on manual time") && e.getMessage().contains("runUntilDone()"), e.getMessage());
            assertEquals(Map.of("load", Outcome.SUCCESS), run.runUntilDone(), "driving the device then ends it");
        }
    }

    @Test
    void aValueReleasedTwiceMakesTheLedgerAssertionFail() throws Exception {
        try (var s = LaneScenario.onSim(KIT, SimBackend.builder(), "a")) {
            var value = s.retained("twice");
            value.close();
            value.close();
            assertThrows(AssertionError.class, s::assertClean);
        }
    }
}
