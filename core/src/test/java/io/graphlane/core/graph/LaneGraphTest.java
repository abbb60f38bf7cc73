package io.graphlane.core.graph;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class LaneGraphTest {

    private static LaneGraph.Builder<String> twoLanes() {
        return LaneGraph.<String>builder().lane("gpu0").lane("gpu1");
    }

    private static GraphValidationException refused(LaneGraph.Builder<String> b) {
        return assertThrows(GraphValidationException.class, b::build);
    }

    @Test
    void aValidGraphKeepsProducersBeforeConsumersAndKnowsItsDependents() {
        LaneGraph<String> g = twoLanes()
                .node("c", "gpu1", "work-c", "b")
                .node("a", "gpu0", "work-a")
                .node("b", "gpu0", "work-b", "a")
                .node("d", "gpu1", "work-d", "a")
                .build();
        assertEquals(List.of("a", "b", "c", "d"), g.nodes().stream().map(GraphNode::id).toList());
        assertEquals(List.of("b", "d"), g.consumersOf("a"));
        assertEquals(Set.of("b", "c", "d"), g.dependentsOf("a"));
        assertEquals(Set.of(), g.dependentsOf("c"));
        assertEquals(4, g.size());
        assertEquals(LaneId.of("gpu1"), g.node("c").lane());
    }

    @Test
    void aCycleIsRefusedWithItsPath() {
        GraphValidationException e = refused(twoLanes()
                .node("a", "gpu0", "w", "c")
                .node("b", "gpu0", "w", "a")
                .node("c", "gpu1", "w", "b")
                .node("free", "gpu1", "w"));
        assertEquals(1, e.problems().size());
        String cycle = e.problems().get(0);
        assertTrue(cycle.startsWith("cycle: "), cycle);
        for (String id : List.of("a", "b", "c")) {
            assertTrue(cycle.contains(id), cycle);
        }
        assertTrue(!cycle.contains("free"), cycle);
    }

    @Test
    void aSelfDependencyIsRefusedByName() {
        GraphValidationException e = refused(twoLanes().node("loop", "gpu0", "w", "loop"));
        assertEquals(List.of("node 'loop' depends on itself"), e.problems());
    }

    @Test
    void anUnknownLaneIsRefusedNamingTheNodeTheLaneAndTheKnownLanes() {
        GraphValidationException e = refused(twoLanes().node("x", "gpu7", "w"));
        assertEquals(List.of("node 'x' is placed on unknown lane 'gpu7' (lanes: gpu0, gpu1)"), e.problems());
    }

    @Test
    void aDuplicateNodeIdIsRefusedByName() {
        GraphValidationException e = refused(twoLanes().node("x", "gpu0", "w").node("x", "gpu1", "w"));
        assertEquals(List.of("duplicate node id 'x'"), e.problems());
    }

    @Test
    void aDuplicateLaneIsRefusedByName() {
        GraphValidationException e = refused(twoLanes().lane("gpu0").node("x", "gpu0", "w"));
        assertEquals(List.of("duplicate lane 'gpu0'"), e.problems());
    }

    @Test
    void aDanglingDependencyIsRefusedNamingBothNodes() {
        GraphValidationException e = refused(twoLanes().node("x", "gpu0", "w", "ghost"));
        assertEquals(List.of("node 'x' depends on 'ghost', which is not in the graph"), e.problems());
    }

    @Test
    void everyProblemIsListedAtOnceInTheMessage() {
        GraphValidationException e = refused(twoLanes()
                .node("x", "gpu9", "w")
                .node("x", "gpu0", "w")
                .node("y", "gpu0", "w", "ghost"));
        assertEquals(3, e.problems().size());
        for (String p : e.problems()) {
            assertTrue(e.getMessage().contains(p), e.getMessage());
        }
        assertTrue(e.getMessage().startsWith("lane graph refused: "), e.getMessage());
    }

    @Test
    void anUnknownNodeLookupNamesIt() {
        LaneGraph<String> g = twoLanes().node("a", "gpu0", "w").build();
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> g.node("zz"));
        assertTrue(e.getMessage().contains("'zz'"), e.getMessage());
    }
}
