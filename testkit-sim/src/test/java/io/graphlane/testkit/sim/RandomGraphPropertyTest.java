package io.graphlane.testkit.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.core.completion.Outcome;
import io.graphlane.core.completion.PoisonedPreconditionException;
import io.graphlane.testkit.ledger.RetentionLedger;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

/**
 * Random DAGs over several lanes, submitted straight to the simulated device (orderAfter on each
 * producer, then submit) under seeded completion orders and random durations: ordering, poisoning
 * and retention hold for every graph and every order.
 */
class RandomGraphPropertyTest {

    /** One node: its lane, its producers (earlier nodes), whether its own work fails, how long it lasts, and a pause before it is submitted. */
    record Node(int lane, List<Integer> dependsOn, boolean fails, int micros, int pauseMicros) { }

    /** A graph of nodes in submission order; every producer comes before its consumers. */
    record Graph(int lanes, List<Node> nodes) {
        @Override
        public String toString() {
            StringBuilder b = new StringBuilder("lanes=" + lanes);
            for (int i = 0; i < nodes.size(); i++) {
                Node n = nodes.get(i);
                b.append(" | n").append(i).append("@L").append(n.lane()).append(n.dependsOn()).append(n.fails() ? " FAILS" : "");
            }
            return b.toString();
        }
    }

    /** How a node is expected to end. */
    private enum Expect { SUCCEEDS, FAILS, POISONED }

    @Provide
    Arbitrary<Graph> graphs() {
        return Arbitraries.integers().between(1, 4).flatMap(lanes -> rawNode(lanes).list().ofMinSize(1).ofMaxSize(24)
                .map(raw -> new Graph(lanes, wire(raw))));
    }

    private static Arbitrary<Node> rawNode(int lanes) {
        return Combinators.combine(
                Arbitraries.integers().between(0, lanes - 1),
                Arbitraries.integers().between(0, 1_000_000).list().ofMaxSize(3),
                Arbitraries.integers().between(0, 99).map(p -> p < 15),
                Arbitraries.integers().between(0, 3_000),
                Arbitraries.integers().between(0, 99).map(p -> p < 70 ? 0 : p * 20))
                .as(Node::new);
    }

    /** Turns raw dependency numbers into indices of earlier nodes. */
    private static List<Node> wire(List<Node> raw) {
        List<Node> nodes = new ArrayList<>(raw.size());
        for (int i = 0; i < raw.size(); i++) {
            Node n = raw.get(i);
            Set<Integer> deps = new TreeSet<>();
            if (i > 0) {
                for (int d : n.dependsOn()) {
                    deps.add(d % i);
                }
            }
            nodes.add(new Node(n.lane(), List.copyOf(deps), n.fails(), n.micros(), n.pauseMicros()));
        }
        return nodes;
    }

    @Property(tries = 200)
    void randomGraphsKeepOrderingPoisoningAndRetention(@ForAll("graphs") Graph graph, @ForAll long seed) {
        Run run = Run.of(graph, seed);
        List<Expect> expected = expectations(graph);

        for (int i = 0; i < graph.nodes().size(); i++) {
            SimCompletion c = run.completions.get(i);
            Outcome outcome = c.outcome().orElse(null);
            assertNotNull(outcome, "node " + i + " (" + c.label() + ") never ended");
            switch (expected.get(i)) {
                case SUCCEEDS -> assertTrue(outcome.isSuccess(), "node " + i + " should succeed but " + outcome);
                case FAILS -> assertSame(run.causes.get(i), assertInstanceOf(Outcome.Failed.class, outcome).cause(),
                        "node " + i + " should fail with its own cause");
                case POISONED -> {
                    Throwable cause = assertInstanceOf(Outcome.Failed.class, outcome, "node " + i + " should be poisoned").cause();
                    PoisonedPreconditionException poisoned = assertInstanceOf(PoisonedPreconditionException.class, cause);
                    Set<String> failedAncestors = new HashSet<>();
                    for (int a : ancestors(graph, i)) {
                        if (expected.get(a) == Expect.FAILS) {
                            failedAncestors.add(run.completions.get(a).label());
                        }
                    }
                    assertTrue(failedAncestors.contains(poisoned.rootProducer()),
                            "node " + i + " names root " + poisoned.rootProducer() + ", not one of its failed ancestors " + failedAncestors);
                }
            }
        }

        Map<String, SimEvent> starts = new HashMap<>();
        Map<String, SimEvent> ends = new HashMap<>();
        for (SimEvent e : run.sim.timeline()) {
            (e.kind() == SimEvent.Kind.START ? starts : ends).put(e.submission(), e);
        }
        Map<Integer, Integer> previousOnLane = new HashMap<>();
        for (int i = 0; i < graph.nodes().size(); i++) {
            Node node = graph.nodes().get(i);
            String label = run.completions.get(i).label();
            SimEvent start = starts.get(label);
            assertEquals(expected.get(i) != Expect.POISONED, start != null, "node " + i + " started iff it was not poisoned");
            List<Integer> mustEndFirst = new ArrayList<>(node.dependsOn());
            Integer previous = previousOnLane.put(node.lane(), i);
            if (previous != null) {
                mustEndFirst.add(previous);
            }
            SimEvent startOrEnd = start != null ? start : ends.get(label);
            for (int p : mustEndFirst) {
                SimEvent producerEnd = ends.get(run.completions.get(p).label());
                assertTrue(producerEnd.order() < startOrEnd.order() && producerEnd.deviceNanos() <= startOrEnd.deviceNanos(),
                        "node " + i + " " + startOrEnd + " before producer " + p + " " + producerEnd);
            }
        }

        run.ledger.assertClean();
        assertEquals(graph.nodes().size(), run.ledger.entries().size());
        assertTrue(run.ledger.entries().stream().allMatch(e -> e.releaseCount() == 1));

        assertEquals(shape(run.sim.timeline()), shape(Run.of(graph, seed).sim.timeline()), "the same graph and seed gave another order");
    }

    /** A timeline without failure causes (each run makes its own cause objects). */
    private static List<String> shape(List<SimEvent> timeline) {
        return timeline.stream().map(e -> e.order() + " " + e.kind() + " " + e.submission() + " @" + e.deviceNanos()
                + (e.outcome() == null ? "" : " " + e.outcome().isSuccess())).toList();
    }

    /** One execution of a graph on a fresh manual-time device. */
    private record Run(SimBackend sim, RetentionLedger ledger, List<SimCompletion> completions, List<RuntimeException> causes) {
        static Run of(Graph graph, long seed) {
            RetentionLedger ledger = new RetentionLedger();
            SimBackend sim = SimBackend.builder().name("prop").manualTime().seed(seed).jitter(Duration.ofNanos(500_000))
                    .recordTimeline().build();
            List<SimExecutor> lanes = sim.forkExecutors(sim.rootExecutor(), graph.lanes());
            List<SimCompletion> completions = new ArrayList<>();
            List<RuntimeException> causes = new ArrayList<>();
            for (int i = 0; i < graph.nodes().size(); i++) {
                Node node = graph.nodes().get(i);
                if (node.pauseMicros() > 0) {
                    sim.advance(Duration.ofNanos(node.pauseMicros() * 1_000L));
                }
                SimExecutor lane = lanes.get(node.lane());
                for (int p : node.dependsOn()) {
                    sim.orderAfter(completions.get(p), lane);
                }
                RuntimeException cause = new IllegalStateException("node " + i + " failed");
                Duration lasts = Duration.ofNanos(node.micros() * 1_000L);
                SimCompletion c = sim.submit(lane, node.fails() ? SimWork.failingAfter(lasts, cause) : SimWork.lasting(lasts));
                sim.retainUntilComplete(lane, c, ledger.retain("value-of-node-" + i, c));
                completions.add(c);
                causes.add(cause);
            }
            sim.runUntilIdle();
            assertFalse(completions.stream().anyMatch(c -> !c.isDone()), "work left running after runUntilIdle");
            sim.close();
            return new Run(sim, ledger, completions, causes);
        }
    }

    private static List<Expect> expectations(Graph graph) {
        List<Expect> expected = new ArrayList<>();
        for (Node node : graph.nodes()) {
            boolean poisoned = node.dependsOn().stream().anyMatch(p -> expected.get(p) != Expect.SUCCEEDS);
            expected.add(poisoned ? Expect.POISONED : node.fails() ? Expect.FAILS : Expect.SUCCEEDS);
        }
        return expected;
    }

    private static Set<Integer> ancestors(Graph graph, int node) {
        Set<Integer> seen = new HashSet<>();
        List<Integer> todo = new ArrayList<>(graph.nodes().get(node).dependsOn());
        while (!todo.isEmpty()) {
            int n = todo.remove(todo.size() - 1);
            if (seen.add(n)) {
                todo.addAll(graph.nodes().get(n).dependsOn());
            }
        }
        return seen;
    }
}
