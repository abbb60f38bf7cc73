package io.graphlane.testkit.scenario;

import io.graphlane.actors.lane.LaneGroup;
import io.graphlane.actors.lane.LaneProtocol;
import io.graphlane.actors.lane.LaneSettings;
import io.graphlane.core.backend.SubmissionBackend;
import io.graphlane.core.completion.Completion;
import io.graphlane.core.completion.Outcome;
import io.graphlane.core.graph.CompletionHandle;
import io.graphlane.core.graph.GraphNode;
import io.graphlane.core.graph.LaneGraph;
import io.graphlane.core.graph.LaneId;
import io.graphlane.testkit.ledger.RetentionLedger;
import io.graphlane.testkit.sim.SimBackend;
import io.graphlane.testkit.sim.SimCompletion;
import io.graphlane.testkit.sim.SimExecutor;
import io.graphlane.testkit.sim.SimWork;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;

/**
 * Lane actors over one backend inside an {@link ActorTestKit}, with a retention ledger, in a few
 * lines: send whole graphs to the lanes at once, wait for every node's outcome, and assert that
 * every retained value was released exactly once, never early, and that the lanes hold nothing.
 *
 * <pre>{@code
 * try (var s = LaneScenario.onSim(testKit, SimBackend.builder().seed(7), "a", "b")) {
 *     var graph = s.graph().node("load", "a", SimWork.lasting(ms(2))).node("use", "b", SimWork.NOOP, "load").build();
 *     Map<String, Outcome> outcomes = s.submit(graph).awaitOutcomes();
 *     s.assertClean();
 * }
 * }</pre>
 *
 * @param <E> the backend's executor type
 * @param <C> the backend's completion type
 * @param <W> the backend's work type
 */
public final class LaneScenario<E, C extends Completion, W> implements AutoCloseable {
    /** How long waits of a scenario last before they fail the test. */
    public static final Duration TIMEOUT = Duration.ofSeconds(30);

    private final ActorTestKit kit;
    private final SubmissionBackend<E, C, W> backend;
    private final RetentionLedger ledger;
    private final LaneGroup<E, C, W> lanes;

    private LaneScenario(ActorTestKit kit, SubmissionBackend<E, C, W> backend, RetentionLedger ledger, LaneSettings settings,
                         String... laneNames) {
        this.kit = Objects.requireNonNull(kit, "kit");
        this.backend = Objects.requireNonNull(backend, "backend");
        this.ledger = Objects.requireNonNull(ledger, "ledger");
        this.lanes = LaneGroup.builder(kit.system(), backend).lanes(laneNames).settings(settings).spawn();
    }

    /** Lanes named {@code laneNames} over a simulated backend built from {@code sim}, recording into a fresh ledger. */
    public static LaneScenario<SimExecutor, SimCompletion, SimWork> onSim(ActorTestKit kit, SimBackend.Builder sim, String... laneNames) {
        RetentionLedger ledger = new RetentionLedger();
        return new LaneScenario<>(kit, sim.ledger(ledger).build(), ledger, LaneSettings.fromConfig(kit.system().settings().config()),
                laneNames);
    }

    /** Lanes named {@code laneNames} over {@code backend}; retain values from {@link #retained(String)} go to {@code ledger}. */
    public static <E, C extends Completion, W> LaneScenario<E, C, W> over(ActorTestKit kit, SubmissionBackend<E, C, W> backend,
                                                                         RetentionLedger ledger, LaneSettings settings,
                                                                         String... laneNames) {
        return new LaneScenario<>(kit, backend, ledger, settings, laneNames);
    }

    /** The spawned lanes. */
    public LaneGroup<E, C, W> lanes() {
        return lanes;
    }

    /** The backend the lanes' executors were forked from. */
    public SubmissionBackend<E, C, W> backend() {
        return backend;
    }

    /** The ledger retained values are recorded in. */
    public RetentionLedger ledger() {
        return ledger;
    }

    /** A graph builder with this scenario's lanes already declared. */
    public LaneGraph.Builder<W> graph() {
        LaneGraph.Builder<W> b = LaneGraph.builder();
        lanes.laneIds().forEach(b::lane);
        return b;
    }

    /** A value to put in a node's retain list: the ledger records when it is released. */
    public RetentionLedger.Entry retained(String name) {
        return ledger.acquire(name);
    }

    /**
     * Sends every node of {@code graph} to its lane at once, in topological order, each after the
     * handles of its producers; returns the submission, whose outcomes arrive by message.
     */
    public Submission submit(LaneGraph<W> graph) {
        TestProbe<LaneProtocol.LaneReply> probe = kit.createTestProbe(LaneProtocol.LaneReply.class);
        long base = lanes.registry().reserveSequences(graph.size());
        long request = lanes.registry().newScope();
        Map<String, CompletionHandle> handles = new HashMap<>();
        Map<CompletionHandle, String> nodes = new HashMap<>();
        long seq = base;
        for (GraphNode<W> node : graph.nodes()) {
            CompletionHandle h = CompletionHandle.local(node.lane(), seq++);
            handles.put(node.id(), h);
            nodes.put(h, node.id());
        }
        for (GraphNode<W> node : graph.nodes()) {
            List<CompletionHandle> after = new ArrayList<>();
            for (String p : node.dependsOn()) {
                CompletionHandle ph = handles.get(p);
                if (!after.contains(ph)) {
                    after.add(ph);
                }
            }
            int consumers = graph.consumersOf(node.id()).size();
            lanes.lane(node.lane()).tell(new LaneProtocol.Submit<>(handles.get(node.id()), node.work(), after, node.retain(), request,
                    LaneProtocol.NO_DEADLINE, consumers, probe.ref()));
        }
        return new Submission(request, probe, nodes, graph.size());
    }

    /**
     * Asserts that every retained value was released exactly once and never before its completion (waiting
     * up to {@link #TIMEOUT} for releases to settle), and that every lane holds nothing.
     */
    public void assertClean() {
        try {
            if (!ledger.awaitSettled(TIMEOUT)) {
                throw new AssertionError("retained values still held after " + TIMEOUT + ": " + ledger);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted while waiting for the ledger to settle", e);
        }
        ledger.assertClean();
        assertLanesIdle();
    }

    /** Asserts that no lane holds in-flight or queued work, handles, subscriptions or waits. */
    public void assertLanesIdle() {
        for (LaneId lane : lanes.laneIds()) {
            TestProbe<LaneProtocol.LaneStatus> probe = kit.createTestProbe(LaneProtocol.LaneStatus.class);
            lanes.lane(lane).tell(new LaneProtocol.GetStatus(probe.ref()));
            LaneProtocol.LaneStatus s = probe.receiveMessage(TIMEOUT);
            if (s.inFlight() != 0 || s.queued() != 0 || s.knownHandles() != 0 || s.pendingSubscriptions() != 0
                    || s.waitingOnOtherLanes() != 0) {
                throw new AssertionError("lane " + lane + " is not idle: " + s);
            }
        }
    }

    /** Stops the lanes (in-flight work finishes first) and closes the backend. */
    @Override
    public void close() {
        try {
            lanes.stop().toCompletableFuture().get(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (Exception e) {
            throw new AssertionError("lanes did not stop within " + TIMEOUT + ": " + e, e);
        } finally {
            backend.close();
        }
    }

    /** A graph sent to the lanes: its request id and the outcomes as they arrive. */
    public static final class Submission {
        private final long requestId;
        private final TestProbe<LaneProtocol.LaneReply> probe;
        private final Map<CompletionHandle, String> nodes;
        private final int size;
        private final Map<String, Outcome> outcomes = new LinkedHashMap<>();

        private Submission(long requestId, TestProbe<LaneProtocol.LaneReply> probe, Map<CompletionHandle, String> nodes, int size) {
            this.requestId = requestId;
            this.probe = probe;
            this.nodes = nodes;
            this.size = size;
        }

        /** The request id every node was submitted under (for {@link LaneProtocol.Cancel}). */
        public long requestId() {
            return requestId;
        }

        /**
         * Waits (up to {@link LaneScenario#TIMEOUT}) until every node has finished and returns each node's
         * outcome by id, in the order they finished. A refused node fails with the refusal.
         */
        public Map<String, Outcome> awaitOutcomes() {
            long deadline = System.nanoTime() + TIMEOUT.toNanos();
            while (outcomes.size() < size) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    throw new AssertionError("only " + outcomes.size() + " of " + size + " nodes finished within " + TIMEOUT);
                }
                probe.receiveMessage(Duration.ofNanos(left)).forEach(r -> {
                    if (r instanceof LaneProtocol.Finished f) {
                        outcomes.put(nodes.get(f.handle()), f.outcome());
                    } else if (r instanceof LaneProtocol.Rejected rej) {
                        outcomes.put(nodes.get(rej.handle()), Outcome.failure(rej.toException()));
                    }
                });
            }
            return outcomes;
        }
    }
}
