package io.graphlane.core.topology;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.core.topology.Topology.Axis;
import io.graphlane.core.topology.Topology.Coordinates;
import java.util.List;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;

class TopologyTest {

    /** The worked example of CONTRACTS.md: D=2 P=3 T=2 E=2, rank 22. */
    @Test
    void theWorkedExampleOfTheContracts() {
        Topology t = new Topology(2, 3, 2, 2);
        assertEquals(24, t.worldSize());
        Coordinates c = t.coordinates(22);
        assertEquals(new Coordinates(1, 2, 1, 0), c);
        assertEquals(22, t.rank(c));
        assertEquals(List.of(20, 22), t.group(22, Axis.TENSOR));
        assertEquals(List.of(14, 18, 22), t.group(22, Axis.PIPELINE));
        assertEquals(List.of(22, 23), t.group(22, Axis.EXPERT));
        assertEquals(List.of(10, 22), t.group(22, Axis.DATA));
        assertEquals(new Range(5, 7), Range.balanced(7, t.pipeline(), c.pipeline()));
        assertEquals(new Range(0, 3), Range.balanced(5, t.expert(), c.expert()));
    }

    @Test
    void anAxisSmallerThanOneIsRefusedByName() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new Topology(1, 0, 1, 1));
        assertEquals("pipeline axis size must be >= 1, got 0", e.getMessage());
    }

    @Test
    void aRankOrCoordinateOutsideTheLayoutIsRefusedByName() {
        Topology t = new Topology(2, 3, 2, 2);
        IllegalArgumentException rank = assertThrows(IllegalArgumentException.class, () -> t.coordinates(24));
        assertTrue(rank.getMessage().contains("rank 24 is outside [0, 24)"), rank.getMessage());
        IllegalArgumentException coord = assertThrows(IllegalArgumentException.class, () -> t.rank(new Coordinates(0, 3, 0, 0)));
        assertEquals("pipeline coordinate 3 is outside [0, 3)", coord.getMessage());
    }

    @Property(tries = 200)
    void coordinatesAndRanksAreInverse(@ForAll @IntRange(min = 1, max = 5) int d, @ForAll @IntRange(min = 1, max = 5) int p,
                                       @ForAll @IntRange(min = 1, max = 5) int t, @ForAll @IntRange(min = 1, max = 5) int e,
                                       @ForAll @IntRange(min = 0, max = 624) int anyRank) {
        Topology topo = new Topology(d, p, t, e);
        int rank = anyRank % topo.worldSize();
        Coordinates c = topo.coordinates(rank);
        assertEquals(rank, topo.rank(c));
        assertEquals(rank, ((c.data() * p + c.pipeline()) * t + c.tensor()) * e + c.expert());
        for (Axis axis : Axis.values()) {
            List<Integer> group = topo.group(rank, axis);
            assertEquals(topo.size(axis), group.size());
            assertEquals(rank, group.get(c.get(axis)), "a rank sits in its own group at its own coordinate");
            for (int i = 0; i < group.size(); i++) {
                Coordinates member = topo.coordinates(group.get(i));
                assertEquals(i, member.get(axis));
                for (Axis other : Axis.values()) {
                    if (other != axis) {
                        assertEquals(c.get(other), member.get(other), "group members differ only on " + axis);
                    }
                }
            }
        }
    }
}
