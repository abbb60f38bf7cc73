package io.graphlane.cluster.pipeline;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.graphlane.cluster.ParallelLayout;
import io.graphlane.inference.llama.LlamaConfig;
import io.graphlane.inference.stage.StagePlan;
import org.junit.jupiter.api.Test;

/**
 * What one position of one request takes on the node of a cluster that holds the most of it, as that node's stage
 * caches allocate it: per layer it hosts, a key and a value row of its share of the kv heads, in F32.
 */
class ClusterKvBudgetTest {
    /** 12 layers, 8 kv heads of 64 features: 8 x 64 x 2 x 4 = 4096 bytes per layer and position on a whole stage. */
    private static final LlamaConfig CONFIG = new LlamaConfig(1024, 2048, 12, 16, 8, 64, 1000, 1e-5f, 10000f, false, false, false, 4096);
    private static final long PER_LAYER = 8 * 64 * 2 * 4;

    @Test
    void aNodeHostingOneStageHoldsThatStagesLayers() {
        // 12 layers over 3 stages on 3 nodes: 4 layers each.
        assertEquals(4 * PER_LAYER, ClusterPipeline.kvBytesPerPosition(ParallelLayout.pipeline(3, 3), CONFIG));
        // 12 layers over 5 stages (3, 3, 2, 2, 2): the node of a 3-layer stage holds the most.
        assertEquals(StagePlan.balanced(12, 5).stage(0).layers().size() * PER_LAYER,
                ClusterPipeline.kvBytesPerPosition(ParallelLayout.pipeline(5, 5), CONFIG));
    }

    @Test
    void aNodeHostingSeveralStagesHoldsAllTheirLayers() {
        // 4 stages of 3 layers on 2 nodes: rank 0 hosts stages 0 and 2, rank 1 stages 1 and 3.
        assertEquals(6 * PER_LAYER, ClusterPipeline.kvBytesPerPosition(ParallelLayout.pipeline(2, 4), CONFIG));
    }

    @Test
    void aShardHoldsItsShareOfTheKvHeadsOfItsStagesLayers() {
        // 2 stages of 6 layers x 4 shards: each node holds 2 of the 8 kv heads of 6 layers.
        assertEquals(6 * PER_LAYER / 4, ClusterPipeline.kvBytesPerPosition(new ParallelLayout(8, 2, 4), CONFIG));
    }
}
