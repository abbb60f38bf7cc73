package io.graphlane.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import org.junit.jupiter.api.Test;

/** Rank derivation from membership and stage placement by rank. */
class RankAndPlacementTest {
    private static RankAssignment.Candidate member(int port) {
        return new RankAssignment.Candidate("127.0.0.1", port, OptionalInt.empty());
    }

    private static RankAssignment.Candidate claiming(int port, int rank) {
        return new RankAssignment.Candidate("127.0.0.1", port, OptionalInt.of(rank));
    }

    @Test
    void unclaimedMembersTakeRanksInAddressOrderWhateverTheirListingOrder() {
        Map<String, Integer> a = RankAssignment.assign(List.of(member(2553), member(2551), member(2552)), 3);
        Map<String, Integer> b = RankAssignment.assign(List.of(member(2552), member(2553), member(2551)), 3);
        assertEquals(Map.of("127.0.0.1:2551", 0, "127.0.0.1:2552", 1, "127.0.0.1:2553", 2), a);
        assertEquals(a, b);
    }

    @Test
    void claimedRanksAreKeptAndTheOthersFillTheFreeRanks() {
        Map<String, Integer> ranks = RankAssignment.assign(List.of(member(2551), claiming(2552, 0), member(2553)), 3);
        assertEquals(Map.of("127.0.0.1:2552", 0, "127.0.0.1:2551", 1, "127.0.0.1:2553", 2), ranks);
    }

    @Test
    void twoMembersClaimingOneRankAreRefusedByName() {
        ClusterConfigException e = assertThrows(ClusterConfigException.class,
                () -> RankAssignment.assign(List.of(claiming(2551, 1), claiming(2552, 1)), 2));
        assertTrue(e.getMessage().contains("rank 1") && e.getMessage().contains("127.0.0.1:2551")
                && e.getMessage().contains("127.0.0.1:2552"), e.getMessage());
    }

    @Test
    void moreMembersThanNodesOrAnOutOfRangeClaimAreRefused() {
        assertThrows(ClusterConfigException.class, () -> RankAssignment.assign(List.of(member(1), member(2)), 1));
        ClusterConfigException e = assertThrows(ClusterConfigException.class,
                () -> RankAssignment.assign(List.of(claiming(2551, 3)), 3));
        assertTrue(e.getMessage().contains("rank 3"), e.getMessage());
    }

    @Test
    void stageIGoesToRankIModN() {
        assertEquals(List.of(0, 3, 6), StagePlacement.stagesOf(0, 3, 7));
        assertEquals(List.of(1, 4), StagePlacement.stagesOf(1, 3, 7));
        assertEquals(List.of(2, 5), StagePlacement.stagesOf(2, 3, 7));
        assertEquals(List.of(), StagePlacement.stagesOf(2, 3, 2));
        assertEquals(2, StagePlacement.ownerOf(5, 3));
        assertThrows(ClusterConfigException.class, () -> StagePlacement.stagesOf(0, 3, 0));
        assertThrows(ClusterConfigException.class, () -> StagePlacement.stagesOf(3, 3, 3));
    }

    @Test
    void withTensorParallelismEachRankHoldsOneShardOfOneStageInTopologyOrder() {
        ParallelLayout layout = new ParallelLayout(6, 3, 2);
        assertEquals(List.of(0), layout.stagesOf(1));
        assertEquals(1, layout.shardOf(1));
        assertEquals(List.of(2), layout.stagesOf(4));
        assertEquals(0, layout.shardOf(4));
        for (int rank = 0; rank < 6; rank++) {
            assertEquals(rank, layout.rankOf(layout.stagesOf(rank).get(0), layout.shardOf(rank)), "rank " + rank);
        }
        ParallelLayout plain = ParallelLayout.pipeline(2, 3);
        assertEquals(List.of(0, 2), plain.stagesOf(0));
        assertEquals(0, plain.shardOf(1));
    }

    @Test
    void aTensorParallelLayoutNeedsStagesTimesShardsNodes() {
        ClusterConfigException e = assertThrows(ClusterConfigException.class, () -> new ParallelLayout(3, 2, 2));
        assertTrue(e.getMessage().contains("--stages 2 x --tensor-parallel 2 needs --nodes 4") && e.getMessage().contains("got --nodes 3"),
                e.getMessage());
        ClusterConfigException zero = assertThrows(ClusterConfigException.class, () -> new ParallelLayout(2, 2, 0));
        assertTrue(zero.getMessage().contains("--tensor-parallel must be >= 1, got 0"), zero.getMessage());
    }
}
