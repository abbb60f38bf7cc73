package io.graphlane.testkit.scenario;

import io.graphlane.actors.lane.LaneGroup;
import io.graphlane.actors.lane.LaneProtocol;
import io.graphlane.actors.lane.LaneSettings;
import io.graphlane.core.backend.SubmissionBackend;
import io.graphlane.core.completion.Completion;
import io.graphlane.core.completion.Outcome;
import io.graphlane.core.graph.GraphNode;
import io.graphlane.core.graph.LaneGraph;
import io.graphlane.core.graph.LaneId;
import io.graphlane.scheduler.graph.GraphResult;
import io.graphlane.scheduler.graph.GraphRun;
import io.graphlane.scheduler.graph.GraphRunner;
import io.graphlane.scheduler.graph.NodeResult;
import io.graphlane.scheduler.graph.RunOptions;
import io.graphlane.scheduler.graph.WorkState;
import io.graphlane.testkit.ledger.RetentionLedger;
import io.graphlane.testkit.sim.SimBackend;
import io.graphlane.testkit.sim.SimCompletion;
import io.graphlane.testkit.sim.SimExecutor;
import io.graphlane.testkit.sim.SimWork;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;

/**
 * Lane actors over one backend inside an {@link ActorTestKit}, with a retention ledger, in a few lines: run whole
 * graphs through the production path ({@link GraphRunner}, as an application runs them), wait for every node's
 * outcome, and assert that every retained value was released exactly once, never early, and that the lanes hold
 * nothing.
 *
 * <pre>{@code
 * try (var s = LaneScenario.onSim(testKit, SimBackend.builder().seed(7), "a", "b")) {
 *     var graph = s.graph().node("load", "a", SimWork.lasting(Duration.ofMillis(2))).node("use", "b", SimWork.NOOP, "load").build();
 *     Map<String, Outcome> outcomes = s.submit(graph).awaitOutcomes();
 *     s.assertClean();
 * }
 * }</pre>
 *
 * <p>Manual device time ({@code SimBackend.builder().manualTime()}): nothing runs on the device until the test drives
 * it, so {@link Submission#runUntilDone()} drives it (runs what is ready, moves device time to each timed event, and
 * waits for the lanes' next submissions) until the graph ended; or drive it by hand with {@link #advance} and then
 * {@link Submission#awaitOutcomes()}. Waiting with {@code awaitOutcomes} while the device holds work that only the test
 * can drive fails at once, naming the cause, instead of waiting out {@link #TIMEOUT}.
 *
 * @param <E> the backend's executor type
 * @param <C> the backend's completion type
 * @param <W> the backend's work type
 */
public final class LaneScenario<E, C extends Completion, W> implements AutoCloseable {
    /** How long waits of a scenario last before they fail the test. */
    public static final Duration TIMEOUT = Duration.ofSeconds(30);
    /** How often a wait on manual device time checks whether only the test can make progress. */
    private static final long CHECK_MILLIS = 50;

    private final ActorTestKit kit;
    private final SubmissionBackend<E, C, W> backend;
    private final RetentionLedger ledger;
    private final LaneGroup<E, C, W> lanes;
    private final GraphRunner<W> runner;

    private LaneScenario(ActorTestKit kit, SubmissionBackend<E, C, W> backend, RetentionLedger ledger, LaneSettings settings,
                         String... laneNames) {
        this.kit = Objects.requireNonNull(kit, "kit");
        this.backend = Objects.requireNonNull(backend, "backend");
        this.ledger = Objects.requireNonNull(ledger, "ledger");
        this.lanes = LaneGroup.builder(kit.system(), backend).lanes(laneNames).settings(settings).spawn();
        this.runner = new GraphRunner<>(lanes);
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

    /** The graph runner the scenario's graphs go through. */
    public GraphRunner<W> runner() {
        return runner;
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
     * Manual device time: runs what is ready and every timed event due within {@code step}, then moves device time by
     * {@code step} ({@link SimBackend#advance}).
     *
     * @throws IllegalStateException if the backend is not a simulated one on manual time
     */
    public Duration advance(Duration step) {
        return manualSim("advance").advance(step);
    }

    /** Runs {@code graph} through the scenario's {@link GraphRunner} with default options. */
    public Submission submit(LaneGraph<W> graph) {
        return submit(graph, RunOptions.defaults());
    }

    /** Runs {@code graph} through the scenario's {@link GraphRunner} with {@code options} (a deadline, a request id). */
    public Submission submit(LaneGraph<W> graph, RunOptions options) {
        return new Submission(graph, runner.start(graph, options));
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

    /** Stops the lanes (in-flight work finishes first; on manual time the scenario drives the device meanwhile) and closes the backend. */
    @Override
    public void close() {
        try {
            CompletableFuture<Void> stopped = lanes.stop().toCompletableFuture();
            SimBackend manual = manualSimOrNull();
            long deadline = System.nanoTime() + TIMEOUT.toNanos();
            while (manual != null && !stopped.isDone() && System.nanoTime() < deadline) {
                manual.runUntilIdle();
                manual.awaitActivity(Duration.ofMillis(CHECK_MILLIS));
            }
            stopped.get(Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime())), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (Exception e) {
            throw new AssertionError("lanes did not stop within " + TIMEOUT + ": " + e, e);
        } finally {
            backend.close();
        }
    }

    private SimBackend manualSimOrNull() {
        return backend instanceof SimBackend sim && sim.timeMode() == SimBackend.TimeMode.MANUAL ? sim : null;
    }

    private SimBackend manualSim(String call) {
        SimBackend sim = manualSimOrNull();
        if (sim == null) {
            throw new IllegalStateException(call + ": the scenario's backend " + backend + " is not a simulated device on manual time"
                    + " (SimBackend.builder().manualTime())");
        }
        return sim;
    }

    /** A graph run through the scenario's runner: its request id and its outcomes once it ended. */
    public final class Submission {
        private final LaneGraph<W> graph;
        private final GraphRun run;
        private final CompletableFuture<GraphResult> result;

        private Submission(LaneGraph<W> graph, GraphRun run) {
            this.graph = graph;
            this.run = run;
            this.result = run.result().toCompletableFuture();
        }

        /** The request id every node was submitted under. */
        public long requestId() {
            return run.requestId();
        }

        /** Cancels the run (see {@link GraphRun#cancel()}). */
        public void cancel() {
            run.cancel();
        }

        /**
         * Waits (up to {@link LaneScenario#TIMEOUT}) until the run ended and returns each node's outcome by id, in the
         * graph's order: success for a committed node, else the failure (a refused, poisoned, cancelled or late node
         * fails with why).
         *
         * @throws AssertionError if the run did not end in time, or at once when the device runs on manual time and
         *     holds work only the test can drive (see {@link #runUntilDone()})
         */
        public Map<String, Outcome> awaitOutcomes() {
            return outcomes(awaitResult());
        }

        /** As {@link #awaitOutcomes()}, returning the runner's whole result. */
        public GraphResult awaitResult() {
            SimBackend manual = manualSimOrNull();
            long deadline = System.nanoTime() + TIMEOUT.toNanos();
            while (true) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    throw new AssertionError(unfinished() + " within " + TIMEOUT);
                }
                try {
                    return result.get(manual == null ? left : Math.min(left, TimeUnit.MILLISECONDS.toNanos(CHECK_MILLIS)),
                            TimeUnit.NANOSECONDS);
                } catch (TimeoutException e) {
                    if (manual != null && manual.pendingDeviceEvents() > 0 && !result.isDone()) {
                        throw new AssertionError(unfinished() + ", and they will not on their own: the simulated device "
                                + manual + " runs on manual time (device time " + manual.now().toNanos() / 1e6 + " ms) and "
                                + manual.pendingDeviceEvents() + " event(s) wait for the test to drive it; call runUntilDone(),"
                                + " or advance(...) before awaitOutcomes()");
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new AssertionError("interrupted while waiting for the graph", e);
                } catch (ExecutionException | CancellationException e) {
                    throw new AssertionError("the graph run ended abnormally: " + e, e);
                }
            }
        }

        /**
         * Manual device time: drives the device (everything ready, device time moved to each timed event, then a wait for
         * the lanes' next submissions) until the run ended, and returns each node's outcome as {@link #awaitOutcomes()}.
         * Work {@link SimWork#held held} for the test must be released or failed from another thread meanwhile.
         *
         * @throws AssertionError if the run did not end within {@link LaneScenario#TIMEOUT}
         * @throws IllegalStateException if the backend is not a simulated device on manual time
         */
        public Map<String, Outcome> runUntilDone() {
            SimBackend manual = manualSim("runUntilDone");
            long deadline = System.nanoTime() + TIMEOUT.toNanos();
            while (!result.isDone()) {
                if (System.nanoTime() > deadline) {
                    throw new AssertionError(unfinished() + " within " + TIMEOUT + " of driving the device (device time "
                            + manual.now().toNanos() / 1e6 + " ms; held work still waiting for the test?)");
                }
                manual.runUntilIdle();
                if (!result.isDone()) {
                    manual.awaitActivity(Duration.ofMillis(CHECK_MILLIS));
                }
            }
            return awaitOutcomes();
        }

        private String unfinished() {
            return "the graph of " + graph.size() + " nodes (" + nodeNames() + ") did not end";
        }

        private String nodeNames() {
            List<String> names = new ArrayList<>();
            for (GraphNode<W> n : graph.nodes()) {
                names.add(n.id() + " on " + n.lane());
            }
            return String.join(", ", names);
        }

        private Map<String, Outcome> outcomes(GraphResult r) {
            Map<String, Outcome> out = new LinkedHashMap<>();
            for (GraphNode<W> n : graph.nodes()) {
                NodeResult node = r.node(n.id());
                if (node.state() == WorkState.COMMITTED) {
                    out.put(n.id(), Outcome.SUCCESS);
                } else {
                    out.put(n.id(), Outcome.failure(node.failure().orElseGet(() -> new IllegalStateException(
                            "node '" + n.id() + "' on lane '" + n.lane() + "' ended " + node.state() + " (the run " + r.state() + ")"))));
                }
            }
            return out;
        }
    }
}
